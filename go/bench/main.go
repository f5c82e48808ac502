// Command bench runs the workloads of docs/BENCHMARKS.md ("Beside the Go original": W1, W2, W4)
// through the Go package, on each path a transaction can take, and the empty call through
// wazero; scripts/bench-go.sh runs it (beside the Go original's harness and the Rust bench when
// given) and prints one table.
//
// Rows are tab-separated, in the Rust bench's BENCH_OUT form (workload, engine, path, ops,
// unit, ns, bound, target kind, target, note), on stdout or into -out. -table FILE... prints
// files of such rows as one table, with each Go package row set against the Go original's.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"sort"
	"strings"
	"time"
)

func main() {
	only := flag.String("only", "empty,W1,W2,W4", "what to run, comma-separated (empty, W1, W2, W4)")
	pathsFlag := flag.String("paths", "", "run only the paths whose name contains one of these, comma-separated")
	scale := flag.Float64("scale", 1, "multiplies every workload's size")
	runs := flag.Int("runs", 3, "runs per figure; the median is reported")
	writeDelay := flag.Duration("write-delay", 100*time.Microsecond, "a write completes no sooner than this after it began")
	out := flag.String("out", "", "append the rows to this file")
	table := flag.Bool("table", false, "print the rows of the files named as arguments as one table")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile (pprof) of the run there")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if *table {
		if err := printTable(os.Stdout, flag.Args()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	w := io.Writer(os.Stdout)
	if *out != "" {
		f, err := os.OpenFile(*out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer f.Close()
		w = f
	}
	if err := run(w, strings.Split(*only, ","), *pathsFlag, *scale, *runs, *writeDelay); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func run(w io.Writer, only []string, pathFilter string, scale float64, runs int, writeDelay time.Duration) error {
	wants := func(path string) bool {
		if pathFilter == "" {
			return true
		}
		for _, p := range strings.Split(pathFilter, ",") {
			if strings.Contains(path, strings.TrimSpace(p)) {
				return true
			}
		}
		return false
	}
	all := workloads(scale)
	for _, name := range only {
		name = strings.TrimSpace(name)
		if name == "empty" {
			calls := max(1000, int(200_000*scale))
			ns, err := median(runs, func() (float64, error) { return emptyCall(calls) })
			if err != nil {
				return err
			}
			row(w, "empty call", "go", "status(), bare instance (wazero)", calls, "call", ns, "the wazero boundary alone")
			continue
		}
		wl, ok := all[name]
		if !ok {
			return fmt.Errorf("unknown workload %q", name)
		}
		for _, p := range paths {
			if !wants(p) {
				continue
			}
			var cpus []float64
			ns, err := median(runs, func() (float64, error) {
				ns, err := runTx(wl, p, writeDelay)
				cpus = append(cpus, lastCPU)
				return ns, err
			})
			if err != nil {
				return fmt.Errorf("%s, %s: %w", name, p, err)
			}
			cpu, _ := median(len(cpus), func() (float64, error) { x := cpus[0]; cpus = cpus[1:]; return x, nil })
			row(w, wl.name, "go", p, wl.n, "tx", ns, fmt.Sprintf("process CPU %.0f ns/tx", cpu))
		}
	}
	return nil
}

func row(w io.Writer, workload, engine, path string, ops int, unit string, ns float64, note string) {
	fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%.3f\t\t\t0\t%s\n", workload, engine, path, ops, unit, ns, note)
}

func median(runs int, f func() (float64, error)) (float64, error) {
	var xs []float64
	for i := 0; i < max(1, runs); i++ {
		x, err := f()
		if err != nil {
			return 0, err
		}
		xs = append(xs, x)
	}
	sort.Float64s(xs)
	return xs[len(xs)/2], nil
}
