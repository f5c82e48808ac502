package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// original is the engine name of the Go original's rows (its harness writes them).
const original = "go original"

type tsvRow struct {
	workload, engine, path, unit, note string
	ops                                int
	ns                                 float64
	// cpu is the process CPU per operation a note gives ("process CPU N ns/tx"), or 0.
	cpu   float64
	round int
}

var cpuNote = regexp.MustCompile(`process CPU ([0-9.]+) ns/\w+`)

func cpuOf(note string) float64 {
	if m := cpuNote.FindStringSubmatch(note); m != nil {
		x, _ := strconv.ParseFloat(m[1], 64)
		return x
	}
	return 0
}

// readRows reads tab-separated rows; a row repeated in a file (a later round) counts as the
// next round of that row.
func readRows(files []string) ([]tsvRow, error) {
	var rows []tsvRow
	seen := map[string]int{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			c := strings.Split(sc.Text(), "\t")
			if len(c) < 6 {
				continue
			}
			ops, _ := strconv.Atoi(c[3])
			ns, err := strconv.ParseFloat(c[5], 64)
			if err != nil {
				continue
			}
			note := ""
			if len(c) > 9 {
				note = c[9]
			}
			key := c[0] + "\x00" + c[1] + "\x00" + c[2]
			rows = append(rows, tsvRow{workload: c[0], engine: c[1], path: c[2], ops: ops, unit: c[4], ns: ns, note: note,
				cpu: cpuOf(note), round: seen[key]})
			seen[key]++
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

func medianOf(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func si(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// printTable prints the rows as one table: per row the median over its rounds, and for the Go
// package's rows the Go original's time over ours, per round (the original's row of the same
// workload and round), as the median and range; then the process CPU per operation where a
// row's note gives it (less moved by other processes' load than the wall time), and the
// original's over ours.
func printTable(w io.Writer, files []string) error {
	rows, err := readRows(files)
	if err != nil {
		return err
	}
	type group struct {
		first  tsvRow
		byRnd  map[int]float64
		rounds []float64
		cpu    []float64
	}
	var order []string
	groups := map[string]*group{}
	for _, r := range rows {
		k := r.workload + "\x00" + r.engine + "\x00" + r.path
		g, ok := groups[k]
		if !ok {
			g = &group{first: r, byRnd: map[int]float64{}}
			groups[k] = g
			order = append(order, k)
		}
		g.byRnd[r.round] = r.ns
		g.rounds = append(g.rounds, r.ns)
		if r.cpu > 0 {
			g.cpu = append(g.cpu, r.cpu)
		}
	}
	rank := func(w string) int {
		for i, x := range []string{"empty call", "W1 tx", "W2 tx-hot", "W4 cold"} {
			if strings.HasPrefix(w, x) {
				return i
			}
		}
		return 9
	}
	engineRank := map[string]int{original: 0, "go": 1, "component": 2, "native": 3}
	sort.SliceStable(order, func(a, b int) bool {
		x, y := groups[order[a]].first, groups[order[b]].first
		if rank(x.workload) != rank(y.workload) {
			return rank(x.workload) < rank(y.workload)
		}
		return engineRank[x.engine] < engineRank[y.engine]
	})
	origOf := func(workload string) *group {
		for _, k := range order {
			if g := groups[k]; g.first.workload == workload && g.first.engine == original {
				return g
			}
		}
		return nil
	}
	lines := [][]string{{"workload", "engine", "path", "ops", "rounds", "ns/op", "ops/s", "x Go original (range)",
		"CPU ns/op", "x Go original, CPU", "note"}}
	for _, k := range order {
		g := groups[k]
		ns := medianOf(g.rounds)
		ratio := ""
		if o := origOf(g.first.workload); o != nil && g.first.engine != original {
			var rs []float64
			for rnd, x := range g.byRnd {
				if on, ok := o.byRnd[rnd]; ok && x > 0 {
					rs = append(rs, on/x)
				}
			}
			if len(rs) > 0 {
				sort.Float64s(rs)
				ratio = fmt.Sprintf("%.2fx (%.2f-%.2f)", medianOf(rs), rs[0], rs[len(rs)-1])
			}
		}
		cpu, cpuRatio := "", ""
		if len(g.cpu) > 0 {
			c := medianOf(g.cpu)
			cpu = fmt.Sprintf("%.0f", c)
			if o := origOf(g.first.workload); o != nil && g.first.engine != original && len(o.cpu) > 0 {
				cpuRatio = fmt.Sprintf("%.2fx", medianOf(o.cpu)/c)
			}
		}
		note := cpuNote.ReplaceAllString(g.first.note, "")
		note = strings.Trim(strings.TrimSuffix(strings.TrimSpace(note), ","), " ")
		lines = append(lines, []string{g.first.workload, g.first.engine, g.first.path,
			si(float64(g.first.ops)) + " " + g.first.unit, strconv.Itoa(len(g.rounds)),
			fmt.Sprintf("%.1f", ns), si(1e9 / ns), ratio, cpu, cpuRatio, note})
	}
	widths := make([]int, len(lines[0]))
	for _, l := range lines {
		for i, c := range l {
			widths[i] = max(widths[i], len(c))
		}
	}
	right := map[int]bool{3: true, 4: true, 5: true, 6: true, 7: true, 8: true, 9: true}
	for n, l := range lines {
		cells := make([]string, len(l))
		for i, c := range l {
			if right[i] {
				cells[i] = fmt.Sprintf("%*s", widths[i], c)
			} else {
				cells[i] = fmt.Sprintf("%-*s", widths[i], c)
			}
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
		if n == 0 {
			seps := make([]string, len(l))
			for i := range l {
				seps[i] = strings.Repeat("-", widths[i]+2)
				if right[i] {
					seps[i] = strings.Repeat("-", widths[i]+1) + ":"
				}
			}
			fmt.Fprintf(w, "|%s|\n", strings.Join(seps, "|"))
		}
	}
	return nil
}
