package queueconf

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// maxResourceValue bounds absolute resource values, to keep them exact in a
// float64 (Hadoop's new form takes a Java long, its old form an int).
const maxResourceValue = 1 << 53

// ParseResources parses a Fair Scheduler resource value (minResources,
// maxResources, maxChildResources, maxContainerAllocation,
// queueMaxResourcesDefault) in the forms Hadoop's
// FairSchedulerConfiguration.parseResourceConfigValue accepts, chosen the
// same way (a "=" anywhere means the new form, else a "%" means a
// percentage, else the old form):
//
//   - new form, absolute: "memory-mb=1024, vcores=4, yarn.io/gpu=2":
//     integers without units, one per type; unnamed types get the field's
//     default (0 for a minimum, no limit for a maximum).
//   - new form, percentages: "vcores=50%, memory-mb=20%": all values must
//     be percentages; unnamed types get 100%.
//   - percentage: "50%" (every type; as in Hadoop a lone "50% memory" also
//     means every type), or "50% memory, 25% cpu" (both needed; "vcores"
//     is accepted for cpu, "memory-mb" for memory; other types get 0).
//   - old form: "1024 mb, 4 vcores", in any order, units in any case, both
//     needed, separated by commas and/or spaces; a fraction is cut to its
//     integer part as Hadoop does; other types get 0.
//
// It is stricter than Hadoop, which searches the string for a pattern and
// ignores what is around it: here every part must be understood, a type
// may be given once, and a resource name must look like one (the names a
// cluster knows are the caller's to check). Negative values are errors, as
// in Hadoop.
func ParseResources(s string) (Amount, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return Amount{}, fmt.Errorf("the resource string is empty")
	}
	if len(t) > 4096 {
		return Amount{}, fmt.Errorf("the resource string is over 4096 bytes")
	}
	switch {
	case strings.Contains(t, "="):
		return parseNewStyle(t)
	case strings.Contains(t, "%"):
		return parseOldPercent(t)
	default:
		return parseOldStyle(t)
	}
}

func parseNewStyle(t string) (Amount, error) {
	pct := strings.Contains(t, "%")
	a := Amount{Set: true}
	if pct {
		a.Frac = map[string]float64{}
		a.Others, a.OthersSet = 1, true
	} else {
		a.Abs = map[string]float64{}
	}
	for _, part := range strings.Split(t, ",") {
		kv := strings.Split(part, "=")
		if len(kv) != 2 {
			return Amount{}, fmt.Errorf("%q: every resource must be of the form name=value", strings.TrimSpace(part))
		}
		name, val := strings.TrimSpace(kv[0]), strings.TrimSpace(kv[1])
		if err := checkResourceName(name); err != nil {
			return Amount{}, err
		}
		if _, dup := a.Abs[name]; dup {
			return Amount{}, fmt.Errorf("resource %q is given twice", name)
		}
		if _, dup := a.Frac[name]; dup {
			return Amount{}, fmt.Errorf("resource %q is given twice", name)
		}
		if pct {
			f, err := parsePercent(val)
			if err != nil {
				return Amount{}, fmt.Errorf("%s=%s: the values must all be percentages when one is: %v", name, val, err)
			}
			a.Frac[name] = f
			continue
		}
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			if strings.HasPrefix(val, "-") && isDigits(val[1:]) {
				return Amount{}, fmt.Errorf("%s=%s: the value must not be negative", name, val)
			}
			return Amount{}, fmt.Errorf("%s=%s: the value must be an integer without units", name, val)
		}
		if n < 0 {
			return Amount{}, fmt.Errorf("%s=%s: the value must not be negative", name, val)
		}
		if n > maxResourceValue {
			return Amount{}, fmt.Errorf("%s=%s: the value is too large", name, val)
		}
		a.Abs[name] = float64(n)
	}
	return a, nil
}

// checkResourceName accepts YARN resource type names ("memory-mb",
// "vcores", "yarn.io/gpu") and refuses the usual slips with a hint.
func checkResourceName(name string) error {
	if name == "" {
		return fmt.Errorf("a resource name is empty")
	}
	switch strings.ToLower(name) {
	case "memory", "mem", "mb", "memory_mb":
		return fmt.Errorf("unknown resource type %q (YARN calls memory %q)", name, Memory)
	case "cpu", "cpus", "vcore", "cores", "vcpu", "vcpus":
		return fmt.Errorf("unknown resource type %q (YARN calls CPU %q)", name, VCores)
	}
	for i, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' ||
			i > 0 && (r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' || r == '/')
		if !ok {
			return fmt.Errorf("%q is not a resource type name", name)
		}
	}
	return nil
}

// parsePercent parses "50%", "12.5 %" into a fraction (0.5, 0.125).
func parsePercent(s string) (float64, error) {
	num, ok := strings.CutSuffix(strings.TrimSpace(s), "%")
	if !ok {
		return 0, fmt.Errorf("%q is not a percentage", s)
	}
	num = strings.TrimSpace(num)
	if strings.HasPrefix(num, "-") && isDecimal(num[1:]) {
		return 0, fmt.Errorf("%q: a percentage must not be negative", s)
	}
	if !isDecimal(num) {
		return 0, fmt.Errorf("%q is not a percentage", s)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsInf(f, 0) || f > 1e9 {
		return 0, fmt.Errorf("%q is not a usable percentage", s)
	}
	return f / 100, nil
}

// isDigits: one or more ASCII digits.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isDecimal: digits, optionally a point and more digits, as Hadoop's
// "\d+(\.\d*)?".
func isDecimal(s string) bool {
	whole, frac, _ := strings.Cut(s, ".")
	return isDigits(whole) && (frac == "" || isDigits(frac))
}

func parseOldPercent(t string) (Amount, error) {
	lower := strings.ToLower(t)
	parts := strings.Split(lower, ",")
	if len(parts) == 1 {
		// Hadoop: one part is one percentage for every type, whatever
		// word follows it.
		num, _, _ := strings.Cut(lower, "%")
		word := strings.TrimSpace(lower[len(num)+1:])
		if word != "" && resourceWord(word) == "" {
			return Amount{}, fmt.Errorf("%q: unknown resource %q after the percentage (memory or cpu)", t, word)
		}
		f, err := parsePercent(num + "%")
		if err != nil {
			return Amount{}, err
		}
		return Amount{Set: true, Frac: map[string]float64{Memory: f, VCores: f}, Others: f, OthersSet: true}, nil
	}
	a := Amount{Set: true, Frac: map[string]float64{}, OthersSet: true}
	for _, part := range parts {
		part = strings.TrimSpace(part)
		num, word, ok := strings.Cut(part, "%")
		if !ok {
			return Amount{}, fmt.Errorf("%q: %q is not a percentage of memory or cpu", t, part)
		}
		typ := resourceWord(strings.TrimSpace(word))
		if typ == "" {
			return Amount{}, fmt.Errorf("%q: %q names no resource (write \"N%% memory, M%% cpu\")", t, part)
		}
		if _, dup := a.Frac[typ]; dup {
			return Amount{}, fmt.Errorf("%q: %s is given twice", t, typ)
		}
		f, err := parsePercent(num + "%")
		if err != nil {
			return Amount{}, err
		}
		a.Frac[typ] = f
	}
	for _, typ := range []string{Memory, VCores} {
		if _, ok := a.Frac[typ]; !ok {
			return Amount{}, fmt.Errorf("%q: missing resource %s (give both memory and cpu, or one percentage for all)", t, oldName(typ))
		}
	}
	return a, nil
}

// resourceWord maps the words of the old percentage form to type names.
func resourceWord(w string) string {
	switch w {
	case "memory", "memory-mb":
		return Memory
	case "cpu", "vcores":
		return VCores
	}
	return ""
}

func oldName(typ string) string {
	if typ == Memory {
		return "memory"
	}
	return "cpu"
}

func parseOldStyle(t string) (Amount, error) {
	lower := strings.ToLower(t)
	a := Amount{Set: true, Abs: map[string]float64{}, OthersSet: true}
	i := 0
	for {
		for i < len(lower) && (lower[i] == ',' || isSpace(lower[i])) {
			i++
		}
		if i == len(lower) {
			break
		}
		start := i
		if lower[i] == '-' || lower[i] == '+' {
			i++
		}
		for i < len(lower) && (lower[i] >= '0' && lower[i] <= '9' || lower[i] == '.') {
			i++
		}
		num := lower[start:i]
		for i < len(lower) && isSpace(lower[i]) {
			i++
		}
		u := i
		for i < len(lower) && lower[i] >= 'a' && lower[i] <= 'z' {
			i++
		}
		unit := lower[u:i]
		if num == "" || unit == "" {
			end := i
			for end < len(lower) && lower[end] != ',' {
				end++
			}
			if end == start {
				end = min(start+1, len(lower))
			}
			return Amount{}, fmt.Errorf("%q: cannot read %q (write \"1024 mb, 4 vcores\", \"50%%\" or \"memory-mb=1024, vcores=4\")",
				t, strings.TrimSpace(lower[start:end]))
		}
		var typ string
		switch unit {
		case "mb":
			typ = Memory
		case "vcores":
			typ = VCores
		default:
			return Amount{}, fmt.Errorf("%q: unknown unit %q (the old form takes mb and vcores)", t, unit)
		}
		if _, dup := a.Abs[typ]; dup {
			return Amount{}, fmt.Errorf("%q: %s is given twice", t, unit)
		}
		neg := strings.HasPrefix(num, "-")
		digits := strings.TrimLeft(num, "+-")
		if strings.HasPrefix(num, "+") || !isDecimal(digits) {
			return Amount{}, fmt.Errorf("%q: %q is not a number", t, num)
		}
		f, err := strconv.ParseFloat(digits, 64)
		if err != nil || f > maxResourceValue {
			return Amount{}, fmt.Errorf("%q: %s %s is too large", t, num, unit)
		}
		f = math.Trunc(f)
		if neg && f != 0 {
			return Amount{}, fmt.Errorf("%q: %s %s must not be negative", t, num, unit)
		}
		a.Abs[typ] = f
	}
	for _, typ := range []string{Memory, VCores} {
		if _, ok := a.Abs[typ]; !ok {
			unit := "mb"
			if typ == VCores {
				unit = "vcores"
			}
			return Amount{}, fmt.Errorf("%q: missing resource: %s (the old form needs both mb and vcores)", t, unit)
		}
	}
	return a, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
