package udf

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// A JavaScript number is an IEEE 754 double (ECMA-262, the Number type): JSON.parse gives the
// nearest one to a number's text, exact for every integer up to 2^53 in magnitude and for few
// beyond, and JSON.stringify prints it with the fewest significant digits that read back as it
// (Number.prototype.toString): below 10^21 in magnitude with all its integer digits and zeros
// after them, from 10^21 on with an exponent. So 9007199254740993 comes back 9007199254740992,
// 18446744073709551615 as 18446744073709552000, 2^60 (a double exactly) as 1152921504606847000,
// 9.007199254740993e15 as 9007199254740992 and 123456789012345678901234 as
// 1.2345678901234568e+23: other integers, which a row would store as if the message held them.

// rounding is what JSON.parse would round in one payload: by the text JavaScript prints for it,
// the first literal that prints so and how many do (rounded), and how many of the payload's
// numbers print so exactly (exact).
type rounding struct {
	rounded map[string]roundedLiteral
	exact   map[string]int
}

type roundedLiteral struct {
	literal string // the first of the payload's literals that prints as the key
	n       int
}

// minRoundingDigits is the fewest significant digits a number's text has when JSON.parse can
// give a double that prints as another integer: every number of 15 significant digits or fewer
// reads back from its double as it was written.
const minRoundingDigits = 16

// roundingOf reads the JSON text payload's numbers (outside its strings) and returns what
// JSON.parse would round: a number whose text has 16 significant digits or more and whose
// double prints as an integer of another value. It reads any text: what is not JSON gives
// nothing or a few needless entries, never an error. nil when nothing would be rounded (the
// payload is read once, byte by byte, and a number of fewer digits is not read further).
func roundingOf(payload string) *rounding {
	var r *rounding
	numbers(payload, false, func(tok string) {
		if significantDigits(tok) < minRoundingDigits {
			return
		}
		f, err := strconv.ParseFloat(tok, 64) // the nearest double, ties to even, as JSON.parse
		if err != nil || math.IsInf(f, 0) {
			return
		}
		// Exact when the printed text is the literal's value, whether or not the double is: the
		// converter reads the text (1e24 prints as 1e+24, the same value, though no double is it).
		printed := jsText(math.Abs(f))
		lit, ok1 := new(big.Rat).SetString(strings.TrimPrefix(tok, "-"))
		back, ok2 := new(big.Rat).SetString(printed)
		if !ok1 || !ok2 {
			return
		}
		exact := lit.Cmp(back) == 0
		if !exact && f != math.Trunc(f) {
			return // a fraction rounded to a fraction: a float, as a Float column rounds it
		}
		if r == nil {
			r = &rounding{rounded: map[string]roundedLiteral{}, exact: map[string]int{}}
		}
		if exact {
			r.exact[printed]++
			return
		}
		e := r.rounded[printed]
		if e.n == 0 {
			e.literal = strings.TrimPrefix(tok, "-")
		}
		e.n++
		r.rounded[printed] = e
	})
	if r != nil && len(r.rounded) == 0 {
		return nil
	}
	return r
}

// check returns an error naming a rounded literal when output (the UDF's result) holds its
// printed text, as a whole run of a number's characters (digits, '.', 'e', 'E', '+'), more
// often than the payload's numbers print so exactly: the output carries a number JSON.parse
// changed (in a number, or a string made of one). nil otherwise.
func (r *rounding) check(output string) error {
	seen := map[string]int{}
	numbers(output, true, func(tok string) {
		tok = strings.TrimPrefix(tok, "-")
		if _, ok := r.rounded[tok]; ok {
			seen[tok]++
		}
	})
	for printed, n := range seen {
		if n > r.exact[printed] {
			return fmt.Errorf("returned %s where the payload holds %s: a JavaScript number is exact only up to 2^53 "+
				"(9007199254740992), so JSON.parse rounded it; the message is dead-lettered rather than stored changed "+
				"(have the producer send such a value as a string, or take it from the payload's text, not from JSON.parse)",
				printed, r.rounded[printed].literal)
		}
	}
	return nil
}

// numbers calls fn with each maximal run of a number's characters in s (a digit or '-', then
// digits, '.', 'e', 'E', '+' and '-'), outside JSON strings, or, with inStrings, inside them too.
func numbers(s string, inStrings bool, fn func(string)) {
	inString, escaped := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inString {
			switch {
			case escaped:
				escaped = false
				continue
			case c == '\\':
				escaped = true
				continue
			case c == '"':
				inString = false
				continue
			case !inStrings:
				continue
			}
		} else if c == '"' {
			inString = true
			continue
		}
		if c == '-' || c >= '0' && c <= '9' {
			// A run starts here unless the byte before continues one (a letter 'e' of a word).
			if i > 0 && isNumberByte(s[i-1]) {
				continue
			}
			j := i + 1
			for j < len(s) && isNumberByte(s[j]) {
				j++
			}
			fn(s[i:j])
			i = j - 1
		}
	}
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}

// significantDigits counts the digits of a number's text before its exponent, less its leading
// zeros (and those after a leading "0.").
func significantDigits(tok string) int {
	if i := strings.IndexAny(tok, "eE"); i >= 0 {
		tok = tok[:i]
	}
	n, leading := 0, true
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		switch {
		case c == '0' && leading:
		case c >= '0' && c <= '9':
			leading = false
			n++
		}
	}
	return n
}

// jsText is the text JavaScript prints for the non-negative double f (Number.prototype.toString):
// the fewest significant digits that read back as f, written out in full below 10^21 and with an
// exponent from it on (1e+21, 1.2345678901234568e+23), as Go's shortest formats give them.
func jsText(f float64) string {
	if f < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'e', -1, 64)
}
