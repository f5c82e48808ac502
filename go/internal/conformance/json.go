package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
)

// Scenario values are decoded with json.Number, so integers up to 2^53 stay exact.

func decode(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

// canonical is v as JSON with map keys sorted (how expected and actual values compare).
func canonical(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
}

func same(a, b any) bool { return canonical(a) == canonical(b) }

func u64(v any) (uint64, error) {
	switch n := v.(type) {
	case json.Number:
		return strconv.ParseUint(n.String(), 10, 64)
	case uint64:
		return n, nil
	case int:
		if n >= 0 {
			return uint64(n), nil
		}
	}
	return 0, fmt.Errorf("not an unsigned integer: %s", canonical(v))
}

func mustU64(v any) uint64 {
	n, err := u64(v)
	if err != nil {
		panic(&StepFailed{Msg: err.Error()})
	}
	return n
}

func list(v any) []any {
	l, ok := v.([]any)
	if !ok {
		panic(&StepFailed{Msg: "not a list: " + canonical(v)})
	}
	return l
}

func object(v any) map[string]any {
	o, ok := v.(map[string]any)
	if !ok {
		panic(&StepFailed{Msg: "not an object: " + canonical(v)})
	}
	return o
}

func num(n uint64) json.Number { return json.Number(strconv.FormatUint(n, 10)) }

var iterPattern = regexp.MustCompile(`^\$i([+-]\d+)?$`)

// subst replaces "$i", "$i+K", "$i-K" inside a repeated step with the iteration's number.
func subst(v any, i int) any {
	switch x := v.(type) {
	case string:
		m := iterPattern.FindStringSubmatch(x)
		if m == nil {
			return x
		}
		k := 0
		if m[1] != "" {
			k, _ = strconv.Atoi(m[1])
		}
		return json.Number(strconv.Itoa(i + k))
	case []any:
		out := make([]any, len(x))
		for j, e := range x {
			out[j] = subst(e, i)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = subst(e, i)
		}
		return out
	}
	return v
}
