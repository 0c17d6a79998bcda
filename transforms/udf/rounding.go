package udf

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
)

// A JavaScript number is an IEEE 754 double (ECMA-262, the Number type): JSON.parse gives the
// nearest one to a number's text, exact for every integer up to 2^53 in magnitude and for few
// beyond, and JSON.stringify prints it with the fewest significant digits that read back as it
// (Number.prototype.toString): below 10^21 in magnitude with all its integer digits and zeros
// after them, from 10^21 on with an exponent. So 9007199254740993 comes back 9007199254740992,
// 18446744073709551615 as 18446744073709552000, 2^60 (a double exactly) as 1152921504606847000,
// 9.007199254740993e15 as 9007199254740992 and 123456789012345678901234 as
// 1.2345678901234569e+23: other integers, which a row would store as if the message held them.

// rounding is what JSON.parse would round in one payload: by the text JavaScript prints for it
// (without a sign), the first literal that prints so (rounded), and the payload's numbers written
// otherwise that print so exactly (exactElsewhere: 9.007199254740992e15 prints as
// 9007199254740992).
type rounding struct {
	rounded        map[string]roundedLiteral
	exactElsewhere map[string]int
}

type roundedLiteral struct {
	literal, printed string // the first of the payload's literals that prints so, and that print, with their sign
	fraction         bool   // the literal is no integer (1.0000000000000001, which prints as 1)
	misread          bool   // the literal has over maxNumberText characters, and JSON.parse reads it as another number (readLong)
	asString         bool   // the literal is a JSON string's whole text (or of base 16, 8 or 2, which JSON has not): the function made a number of it
	from             string // where the literal is when not in the payload: `the attribute "uid"`, "the message id"
}

// source is a text the function receives beside the payload, which it may turn into a number
// (Number(message.attributes.uid), parseInt(message.messageId)), and how an error names it.
type source struct{ text, name string }

// messageSources returns the message id and the attributes' values (by key order) that hold 16
// digits or more, as JSON strings, which numbers reads as it reads the payload's strings; nil
// when none does.
func messageSources(m messageInfo) []source {
	var out []source
	if digits(m.ID) >= minRoundingDigits || hasRadixPrefix(m.ID) {
		out = append(out, source{quote(m.ID), "the message id"})
	}
	var keys []string
	for k, v := range m.Attributes {
		if digits(v) >= minRoundingDigits || hasRadixPrefix(v) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		out = append(out, source{quote(m.Attributes[k]), fmt.Sprintf("the attribute %q", k)})
	}
	return out
}

// quote returns s as a JSON string.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// digits counts the decimal digits of s.
func digits(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if isDigit(s[i]) {
			n++
		}
	}
	return n
}

// minRoundingDigits is the fewest significant digits a number's text has when JSON.parse can
// give a double that prints as another integer: every number of 15 significant digits or fewer
// reads back from its double as it was written.
const minRoundingDigits = 16

// maxNumberText bounds the numbers read as exact fractions (math/big), whose cost grows faster
// than their length: a number's text longer than this is only compared with what JSON.parse
// misreads it as (readLong; an integer of more than 309 digits is beyond a double's range, and
// prints as no integer).
const maxNumberText = 800

// roundingOf reads the JSON text payload's numbers, in its strings too (a string may hold JSON
// that the function parses), and returns what JSON.parse would round: a number whose text has
// 16 significant digits or more and whose double prints as an integer of another value, or one
// of more than maxNumberText characters that it misreads (readLong). It reads any text: what is
// not JSON gives nothing or a few needless entries, never an error. nil when nothing would be
// rounded (the payload is read once, byte by byte, and a number of fewer digits is not read
// further). The texts of others (messageSources) are read after the payload, alike.
func roundingOf(payload string, others ...source) *rounding {
	var r *rounding
	numbers(payload, func(tok string, asString bool) { r = r.read(tok, "", asString) })
	for _, src := range others {
		numbers(src.text, func(tok string, _ bool) { r = r.read(tok, src.name, true) })
	}
	if r == nil || len(r.rounded) == 0 {
		return nil
	}
	// The payload's shorter numbers written otherwise than JavaScript prints them (1.0, 100.00,
	// 1e2) are exactly an integer that a rounded literal prints as: JSON.stringify writes them so
	// too, so the output may hold that print for them. Read only when something was rounded.
	short := func(tok string, _ bool) { r.readShort(tok) }
	numbers(payload, short)
	for _, src := range others {
		numbers(src.text, short)
	}
	return r
}

// read notes tok, a number's text in the text from (the payload when ""), the whole text of a
// JSON string of it or not (asString), when it has 16 significant digits or more: rounded when
// its double prints as another integer, exact elsewhere when it prints otherwise than written but
// as the same value; one of more than maxNumberText characters goes to readLong. It returns r,
// made when nil and needed.
func (r *rounding) read(tok, from string, asString bool) *rounding {
	if _, base := radixRun(strings.TrimPrefix(tok, "-"), 0); base != 0 {
		return r.readRadix(tok, base, from)
	}
	if len(tok) > maxNumberText {
		return r.readLong(tok, from, asString)
	}
	if significantDigits(tok) < minRoundingDigits {
		return r
	}
	if o, ok := order(tok); ok && o < -1 {
		// Below 0.1 in magnitude: its double is no integer, nor 0 (which is no other integer's
		// print either). Known from the text, without ParseFloat, which takes microseconds for
		// some such numbers (the subnormals, 4.9406564584124654e-324).
		return r
	}
	f, err := strconv.ParseFloat(tok, 64) // the nearest double, ties to even, as JSON.parse
	if err != nil || math.IsInf(f, 0) || f == 0 {
		return r // beyond a double's range, or below it: no integer is printed but 0
	}
	if f != math.Trunc(f) {
		// A double that is no integer prints as no integer, so its print is never one of the
		// rounded ones (integers), which are all that check looks for: a fraction rounded to a
		// fraction is a float, as a Float column rounds it. Left before the exact arithmetic
		// below, which costs most for such numbers (a subnormal's print has 300 digits and
		// more): the check runs after each call, within the call's bound.
		return r
	}
	// Exact when the printed text is the literal's value, whether or not the double is: the
	// converter reads the text (1e24 prints as 1e+24, the same value, though no double is it).
	unsigned := strings.TrimPrefix(tok, "-")
	printed := jsText(math.Abs(f))
	var exact, fraction bool
	if digitsOnly(unsigned) && !strings.ContainsRune(printed, 'e') {
		// An integer's digits against the print of an integer below 10^21: the same value
		// exactly when they are the same digits (without leading zeros), as most of a payload's
		// long numbers are (ids); compared without math/big.
		exact = strings.TrimLeft(unsigned, "0") == printed
	} else {
		lit, ok1 := new(big.Rat).SetString(unsigned)
		back, ok2 := new(big.Rat).SetString(printed)
		if !ok1 || !ok2 {
			return r
		}
		exact, fraction = lit.Cmp(back) == 0, !lit.IsInt()
	}
	if exact && unsigned == printed {
		return r // written as it prints
	}
	return r.note(printed, exact, roundedLiteral{literal: tok, printed: printed, fraction: fraction, from: from, asString: asString})
}

// readLong notes tok, a number's text of more than maxNumberText bytes, when JSON.parse misreads
// it: goja's JSON.parse (encoding/json) and Number() read a number with strconv.ParseFloat,
// which keeps 800 digits of its integer part and then misplaces the decimal point (1 followed
// by 800 zeros and e-800, which is 1, reads as 0.1; convert.ParseFloat reads it right). A
// misread that prints as an integer or a fraction is noted as rounded, as read notes one.
func (r *rounding) readLong(tok, from string, asString bool) *rounding {
	got, err := strconv.ParseFloat(tok, 64)
	want, werr := convert.ParseFloat([]byte(tok), 64)
	if (err != nil && werr != nil) || got == want || math.IsInf(got, 0) || math.IsNaN(got) {
		return r // misread alike, or not misread
	}
	shown := tok
	if len(shown) > 40 {
		shown = fmt.Sprintf("%s…%s (a number of %d characters)", tok[:20], tok[len(tok)-12:], len(tok))
	}
	return r.note(jsText(math.Abs(got)), false, roundedLiteral{literal: shown, printed: jsText(math.Abs(got)), misread: true, from: from, asString: asString})
}

// note records a literal that prints as printed (without a sign): exact elsewhere when exact,
// else rounded when it is the first literal that prints so (lit, its printed text given the
// literal's sign here). It returns r, made when nil.
func (r *rounding) note(printed string, exact bool, lit roundedLiteral) *rounding {
	if r == nil {
		r = &rounding{rounded: map[string]roundedLiteral{}, exactElsewhere: map[string]int{}}
	}
	switch _, seen := r.rounded[printed]; {
	case exact:
		r.exactElsewhere[printed]++
	case !seen:
		if strings.HasPrefix(lit.literal, "-") {
			lit.printed = "-" + lit.printed
		}
		r.rounded[printed] = lit
	}
	return r
}

// readRadix notes tok, an integer's text of the base (16, 8 or 2) with its prefix and maybe a
// '-' (radixRun), as read does a decimal one: rounded when it is beyond 2^53 and its double
// (the nearest, ties to even, as Number("0x…") and parseInt(…, 16) give it) prints as another
// integer, exact elsewhere when the double is it.
func (r *rounding) readRadix(tok string, base int, from string) *rounding {
	unsigned := strings.TrimPrefix(tok, "-")
	if len(unsigned) > maxNumberText {
		return r
	}
	n, ok := new(big.Int).SetString(unsigned[2:], base)
	if !ok || n.BitLen() <= 53 {
		return r // every integer up to 2^53 is a double
	}
	exactly := new(big.Float).SetInt(n) // of n's precision: exact
	f, _ := exactly.Float64()
	if math.IsInf(f, 0) {
		return r
	}
	printed := jsText(f)
	exact := new(big.Float).SetFloat64(f).Cmp(exactly) == 0
	return r.note(printed, exact, roundedLiteral{literal: tok, printed: printed, asString: true, from: from})
}

// readShort notes tok, a number's text of fewer than 16 significant digits written otherwise
// than it prints, when it is exactly an integer that a rounded literal prints as.
func (r *rounding) readShort(tok string) {
	if significantDigits(tok) >= minRoundingDigits || !strings.ContainsAny(tok, ".eE") || len(tok) > maxNumberText {
		return // read above, or written as it prints
	}
	f, err := strconv.ParseFloat(tok, 64)
	if err != nil || math.IsInf(f, 0) {
		return
	}
	printed := jsText(math.Abs(f))
	if _, ok := r.rounded[printed]; !ok {
		return
	}
	lit, ok1 := new(big.Rat).SetString(strings.TrimPrefix(tok, "-"))
	back, ok2 := new(big.Rat).SetString(printed)
	if ok1 && ok2 && lit.Cmp(back) == 0 {
		r.exactElsewhere[printed]++
	}
}

// check returns an error naming a rounded literal when output (the UDF's result) holds its
// printed text more often than the payload and the others' texts (as given to roundingOf) do
// (as text, or as another number's print): the output carries a number JSON.parse changed, in a
// number or in a string made of one ("type" + e.id). A text is counted where no digit stands
// right before or after it. nil otherwise.
func (r *rounding) check(output string, payload string, others ...source) error {
	in, out := r.count(payload), r.count(output)
	for _, src := range others {
		for printed, n := range r.count(src.text) {
			in[printed] += n
		}
	}
	for printed, n := range out {
		if n > in[printed]+r.exactElsewhere[printed] {
			lit := r.rounded[printed]
			why := "a JavaScript number is exact only up to 2^53 (9007199254740992), so JSON.parse rounded it"
			if lit.fraction {
				why = "a JavaScript number holds 15 to 17 significant digits, so JSON.parse rounded it to an integer"
			}
			where, advice := "the payload", "have the producer send such a value as a string, or take it from the payload's text, not from JSON.parse"
			switch {
			case lit.from != "":
				where = lit.from
			case lit.asString:
				where = "a string of the payload"
			}
			if lit.from != "" || lit.asString { // a string the function made a number of
				advice = "pass the value on as a string, not as a number"
				why = "a JavaScript number is exact only up to 2^53 (9007199254740992), so it was rounded when the function made a number of it"
				if lit.fraction {
					why = "a JavaScript number holds 15 to 17 significant digits, so it was rounded to an integer when the function made a number of it"
				}
			}
			if lit.misread {
				why = "the JavaScript engine reads a number of more than 800 digits before its decimal point as another value (its parser keeps 800 of them, and puts the decimal point after them)"
				advice = "write the number with fewer digits (1e10, not 1 with 800 zeros and e-790)"
			}
			return fmt.Errorf("returned %s where %s holds %s: %s; the message is dead-lettered rather than stored changed (%s)",
				lit.printed, where, lit.literal, why, advice)
		}
	}
	return nil
}

// count returns how many times s holds each rounded print, in one pass: each maximal run of
// digits (a print below 10^21) that no fraction or exponent follows, and each maximal run of a number's characters from its first
// digit (one with an exponent, 1.2345678901234569e+23). A run is read no further than the
// longest print: each digit after a '.' or an 'e' starts a run that ends where the one before it
// ends, so reading each to its end was quadratic in a text of such runs ("1.1.1.1…" or
// "1e1e1e…", half a million runs in a megabyte, read for minutes).
func (r *rounding) count(s string) map[string]int {
	longest := 0
	for printed := range r.rounded {
		longest = max(longest, len(printed))
	}
	counts := map[string]int{}
	for i := 0; i < len(s); {
		if !isDigit(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		// Digits before a fraction or an exponent are not the integer they spell: the payload's
		// 1.0000000000000001, which prints as 1, holds no 1.
		partOf := j+1 < len(s) && (s[j] == '.' || s[j] == 'e' || s[j] == 'E') && (isDigit(s[j+1]) || s[j+1] == '+' || s[j+1] == '-')
		if _, ok := r.rounded[s[i:j]]; ok && !partOf {
			counts[s[i:j]]++
		}
		if j < len(s) && (s[j] == '.' || s[j] == 'e' || s[j] == 'E') && (i == 0 || !isDigit(s[i-1])) {
			k := j
			for k < len(s) && isNumberByte(s[k]) && k-i <= longest {
				k++
			}
			if _, ok := r.rounded[s[i:k]]; ok && k-i <= longest { // a longer run is no print
				counts[s[i:k]]++
			}
		}
		i = j
	}
	return counts
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// order returns the power of ten of the first significant digit of tok, a number's text
// (123 → 2, -0.05 → -2, 5e-3 → -3), read from its text alone; ok is false for a text that is not
// a number of JSON's syntax (leading zeros allowed), has no significant digit, or has an
// exponent of more than 9 digits.
func order(tok string) (o int, ok bool) {
	s := strings.TrimPrefix(tok, "-")
	mantissa, exp, hasExp := strings.Cut(s, "e")
	if !hasExp {
		mantissa, exp, hasExp = strings.Cut(s, "E")
	}
	whole, frac, _ := strings.Cut(mantissa, ".")
	if !digitsOnly(whole) || (frac != "" && !digitsOnly(frac)) || (frac == "" && strings.Contains(mantissa, ".")) {
		return 0, false
	}
	if t := strings.TrimLeft(whole, "0"); t != "" {
		o = len(t) - 1
	} else if t := strings.TrimLeft(frac, "0"); t != "" {
		o = -(len(frac) - len(t)) - 1
	} else {
		return 0, false // no significant digit: 0
	}
	if hasExp {
		e := strings.TrimPrefix(strings.TrimPrefix(exp, "+"), "-")
		if !digitsOnly(e) || len(e) > 9 {
			return 0, false
		}
		n, err := strconv.Atoi(e)
		if err != nil {
			return 0, false
		}
		if strings.HasPrefix(exp, "-") {
			n = -n
		}
		o += n
	}
	return o, true
}

// digitsOnly reports whether s is one or more decimal digits and nothing else.
func digitsOnly(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}

// numbers calls fn with each maximal run of a number's characters in s that starts with a digit
// or a '-' (digits, '.', 'e', 'E', '+' and '-'), and with the digits after a '+' that starts no
// such run, in its JSON strings too (asString when the run is a string's whole text: stringOf): a string's escape
// (\" or \u0041) is skipped whole, so a number of JSON held in a string is read as the function
// that parses the string reads it.
func numbers(s string, fn func(tok string, asString bool)) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++ // the escaped byte
			if s[i] == 'u' {
				i += 4
			}
			continue
		case c != '-' && !isDigit(c):
			continue
		case i > 0 && isNumberByte(s[i-1]) && s[i-1] != '-' && s[i-1] != '+':
			// Within a run that started at a letter e or a dot: not a number. After a sign it
			// is one: Number, parseInt and parseFloat read "+9007199254740993" as they read
			// 9007199254740993 (a '+' that is an exponent's sign was read with its number).
			continue
		}
		k := i
		if c == '-' {
			k++
		}
		if end, base := radixRun(s, k); base != 0 {
			fn(s[i:end], true) // "0x20000000000001": Number reads it, and rounds it as it rounds a decimal one
			i = end - 1
			continue
		}
		j := i + 1
		for j < len(s) && isNumberByte(s[j]) {
			j++
		}
		fn(s[i:j], stringOf(s, i, j))
		i = j - 1
	}
}

// stringOf reports whether s[i:j], a number's text, is the whole text of a JSON string of s but
// for a '+' before it and spaces around it ("9007199254740993", " +9007199254740993"): a string
// that a function made a number of (Number, parseInt), where JSON.parse would read a number of
// JSON it holds among other text ("{\"id\":9007199254740993}").
func stringOf(s string, i, j int) bool {
	if i > 0 && s[i-1] == '+' {
		i--
	}
	for i > 0 && s[i-1] == ' ' {
		i--
	}
	for j < len(s) && s[j] == ' ' {
		j++
	}
	return i > 0 && s[i-1] == '"' && j < len(s) && s[j] == '"'
}

// radixRun returns the end of an integer's text of base 16, 8 or 2 with its prefix that starts at
// s[i] ("0x1F", "0o17", "0b101": Number reads such a string, and parseInt(…, 16) the first), and
// its base; base 0 when none starts there.
func radixRun(s string, i int) (end, base int) {
	if i+2 >= len(s) || s[i] != '0' {
		return 0, 0
	}
	switch s[i+1] {
	case 'x', 'X':
		base = 16
	case 'o', 'O':
		base = 8
	case 'b', 'B':
		base = 2
	default:
		return 0, 0
	}
	j := i + 2
	for j < len(s) && digitOf(s[j], base) {
		j++
	}
	if j == i+2 {
		return 0, 0
	}
	return j, base
}

// digitOf reports whether c is a digit of base 16, 8 or 2.
func digitOf(c byte, base int) bool {
	switch base {
	case 16:
		return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
	case 8:
		return c >= '0' && c <= '7'
	}
	return c == '0' || c == '1'
}

// hasRadixPrefix reports whether s holds an integer's text of base 16, 8 or 2 (radixRun).
func hasRadixPrefix(s string) bool {
	for i := 0; i+2 < len(s); i++ {
		if _, base := radixRun(s, i); base != 0 {
			return true
		}
	}
	return false
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
// the fewest significant digits that read back as f, written out in full from 10^-6 to below
// 10^21 and with an exponent beyond (1e+21, 1.2345678901234568e+23, 1e-7: Go's shortest
// formats, with the exponent's leading zero that Go writes and JavaScript does not taken out).
func jsText(f float64) string {
	if f != 0 && f < 1e-6 {
		s := strconv.FormatFloat(f, 'e', -1, 64)
		if i := strings.Index(s, "e-0"); i >= 0 {
			s = s[:i+2] + s[i+3:]
		}
		return s
	}
	if f < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'e', -1, 64)
}
