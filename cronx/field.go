package cronx

import (
	"fmt"
	"strconv"
	"strings"
)

// bounds are the values a field may take, and the names it accepts for
// them (case-insensitive), if any.
type bounds struct {
	min, max uint
	names    map[string]uint
}

// The bounds of each field.
var (
	seconds = bounds{0, 59, nil}
	minutes = bounds{0, 59, nil}
	hours   = bounds{0, 23, nil}
	dom     = bounds{1, 31, nil}
	months  = bounds{1, 12, map[string]uint{
		"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
		"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
	}}
	dow = bounds{0, 6, map[string]uint{
		"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6,
	}}
)

// starBit is set in a field's bits when the field was "*" or "?" (with no
// step), because crontab matches the two day fields differently when one of
// them is unrestricted. Bit 63 is free: no field value exceeds 59.
const starBit = 1 << 63

// getField returns the bits of a field: a comma-separated list of ranges.
func getField(field string, r bounds) (uint64, error) {
	var bits uint64
	for _, expr := range strings.FieldsFunc(field, func(c rune) bool { return c == ',' }) {
		b, err := getRange(expr, r)
		if err != nil {
			return bits, err
		}
		bits |= b
	}
	return bits, nil
}

// getRange returns the bits of one range of a field: "*" or "?" (every
// value), a value, or low-high, each optionally followed by "/step". A single
// value with a step, "5/15", runs from the value to the field's maximum.
func getRange(expr string, r bounds) (uint64, error) {
	span, stepText, hasStep := strings.Cut(expr, "/")
	low, high, hasHigh := strings.Cut(span, "-")

	var start, end uint
	var star uint64
	if low == "*" || low == "?" {
		start, end, star = r.min, r.max, starBit
	} else {
		var err error
		if start, err = parseValue(low, r.names); err != nil {
			return 0, fmt.Errorf("range %q: %w", expr, err)
		}
		end = start
		if hasHigh {
			if strings.Contains(high, "-") {
				return 0, fmt.Errorf("range %q: too many hyphens", expr)
			}
			if end, err = parseValue(high, r.names); err != nil {
				return 0, fmt.Errorf("range %q: %w", expr, err)
			}
		}
	}

	step := uint(1)
	if hasStep {
		if strings.Contains(stepText, "/") {
			return 0, fmt.Errorf("range %q: too many slashes", expr)
		}
		var err error
		if step, err = parseValue(stepText, nil); err != nil {
			return 0, fmt.Errorf("range %q: %w", expr, err)
		}
		if !hasHigh {
			end = r.max
		}
		if step > 1 {
			// "*/2" skips values, so the field is no longer unrestricted.
			star = 0
		}
	}

	switch {
	case start < r.min:
		return 0, fmt.Errorf("range %q: beginning of range %d below minimum %d", expr, start, r.min)
	case end > r.max:
		return 0, fmt.Errorf("range %q: end of range %d above maximum %d", expr, end, r.max)
	case start > end:
		return 0, fmt.Errorf("range %q: beginning of range %d beyond end of range %d", expr, start, end)
	case step == 0:
		return 0, fmt.Errorf("range %q: step of range should be a positive number", expr)
	}
	return getBits(start, end, step) | star, nil
}

// parseValue reads a number, or one of names.
func parseValue(text string, names map[string]uint) (uint, error) {
	if v, ok := names[strings.ToLower(text)]; ok {
		return v, nil
	}
	n, err := strconv.Atoi(text)
	if err != nil {
		return 0, fmt.Errorf("failed to parse int from %q", text)
	}
	if n < 0 {
		return 0, fmt.Errorf("negative number %d not allowed", n)
	}
	return uint(n), nil
}

// getBits returns the bits of the values from lo to hi, every step.
func getBits(lo, hi, step uint) uint64 {
	var bits uint64
	for v := lo; v <= hi; v += step {
		bits |= 1 << v
	}
	return bits
}

// all returns the bits of every value of r, marked as unrestricted.
func all(r bounds) uint64 {
	return getBits(r.min, r.max, 1) | starBit
}
