package udf

import (
	"fmt"
	"strconv"
	"strings"
)

// roundedInteger is an integer literal of a payload that JSON.parse and JSON.stringify do not give
// back, and the text JavaScript prints for the number JSON.parse makes of it. A JavaScript number
// is an IEEE 754 double (ECMA-262, the Number type): every integer up to 2^53 in magnitude exactly,
// beyond it the nearest double; Number.prototype.toString prints one below 10^21 with the fewest
// significant digits that read back as it, then zeros: 9007199254740993 → 9007199254740992,
// 18446744073709551615 → 18446744073709552000, and 2^60 (a double exactly) → 1152921504606847000.
type roundedInteger struct {
	literal, rounded string
}

// roundedIntegers returns the integer literals of the JSON text payload (numbers outside its
// strings, without a fraction or exponent, below 10^21 in magnitude) that JavaScript does not
// print back as they are, each with the text it prints. It reads any text: what is not JSON
// gives nothing or a few needless entries, never an error. nil when the payload holds no run of
// 16 digits, the shortest beyond 2^53 (a payload is read once, byte by byte).
func roundedIntegers(payload string) []roundedInteger {
	var out []roundedInteger
	inString, escaped, run := false, false, 0
	for i := 0; i < len(payload); i++ {
		c := payload[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c >= '0' && c <= '9':
			run++
			continue
		}
		if run >= 16 {
			out = appendRounded(out, payload, i-run, i)
		}
		run = 0
	}
	if run >= 16 {
		out = appendRounded(out, payload, len(payload)-run, len(payload))
	}
	return out
}

// appendRounded appends the digits payload[start:end] when they are an integer literal (not
// followed by a fraction or an exponent) that JSON.parse rounds.
func appendRounded(out []roundedInteger, payload string, start, end int) []roundedInteger {
	if end < len(payload) && strings.IndexByte(".eE", payload[end]) >= 0 || end-start > 21 {
		return out // a fraction follows, or 10^21 and beyond (JavaScript prints those with an exponent)
	}
	if start > 0 {
		switch payload[start-1] {
		case '.', 'e', 'E', '+': // a fraction's or an exponent's digits
			return out
		case '-':
			if start > 1 && (payload[start-2] == 'e' || payload[start-2] == 'E') {
				return out
			}
		}
	}
	digits := strings.TrimLeft(payload[start:end], "0")
	f, err := strconv.ParseFloat(digits, 64) // the nearest double, ties to even, as JSON.parse
	if err != nil || f >= 1e21 {
		return out
	}
	// JavaScript prints a number with the fewest digits that read back as it, then zeros: 2^60,
	// a double exactly, prints as 1152921504606847000. Go's shortest form is the same digits.
	if rounded := strconv.FormatFloat(f, 'f', -1, 64); rounded != digits {
		out = append(out, roundedInteger{literal: payload[start:end], rounded: rounded})
	}
	return out
}

// roundedInOutput returns an error naming the first of rounded whose rounded text the UDF's
// output holds as a run of digits (and the payload does not): the output carries a number
// JSON.parse changed, and storing it would store a value the message never held. nil otherwise.
func roundedInOutput(rounded []roundedInteger, payload, output string) error {
	for _, r := range rounded {
		if hasDigitRun(output, r.rounded) && !hasDigitRun(payload, r.rounded) {
			return fmt.Errorf("returned %s where the payload holds %s: a JavaScript number is exact only up to 2^53 "+
				"(9007199254740992), so JSON.parse rounded it; the message is dead-lettered rather than stored changed "+
				"(have the producer send such a value as a string, or take it from the payload's text, not from JSON.parse)",
				r.rounded, r.literal)
		}
	}
	return nil
}

// hasDigitRun reports whether s holds digits as a whole run of digits (no digit just before or
// after it).
func hasDigitRun(s, digits string) bool {
	for from := 0; ; {
		i := strings.Index(s[from:], digits)
		if i < 0 {
			return false
		}
		i += from
		end := i + len(digits)
		if (i == 0 || !isDigit(s[i-1])) && (end == len(s) || !isDigit(s[end])) {
			return true
		}
		from = i + 1
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
