package convert

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestValidUTF8 checks validUTF8 against utf8.Valid on every sequence of up to three bytes, after
// ASCII that puts it in the first word, across a word boundary, in the tail and after a block of
// 32 bytes, and on random mixes of lead, continuation and ASCII bytes.
func TestValidUTF8(t *testing.T) {
	check := func(p []byte) {
		if got, want := validUTF8(p), utf8.Valid(p); got != want {
			t.Fatalf("validUTF8(%x) = %v, utf8.Valid says %v", p, got, want)
		}
	}
	for _, prefix := range []string{"", "abcdefg", "abcdefghijklmno", strings.Repeat("x", 31), strings.Repeat("x", 37)} {
		for a := 0x7F; a < 256; a++ {
			for b := 0; b < 256; b++ {
				for _, c := range []byte{0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC2, 0xE0, 0xF0, 0xFF} {
					p := append([]byte(prefix), byte(a), byte(b), c)
					check(p)
					check(p[:len(p)-1])
					check(append(p, "xyz"...))
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	bytes := []byte{'A', 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF}
	for range 200_000 {
		p := make([]byte, r.IntN(80))
		for i := range p {
			p[i] = bytes[r.IntN(len(bytes))]
			if r.IntN(4) == 0 {
				p[i] = 'A' // long runs of ASCII too
			}
		}
		check(p)
	}
}

// TestUnescape checks the text of strings with escapes against encoding/json's, for escapes at
// every offset of a word and runs of every length between them (encoding/json replaces a lone
// surrogate, which the converter refuses, so the strings here have none).
func TestUnescape(t *testing.T) {
	parts := []string{`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, `\u0041`, `\u00e9`, `\u20AC`, `\uFFFF`, `\u0000`,
		`\ud83d\ude00`, `\uDBFF\uDFFF`, "é", "€", "😀", "a", "abcdefgh", "0123456789abcdefghij"}
	r := rand.New(rand.NewPCG(3, 4))
	var scratch []byte
	for range 50_000 {
		var b strings.Builder
		b.WriteByte('"')
		for range r.IntN(12) {
			b.WriteString(parts[r.IntN(len(parts))])
		}
		b.WriteString(`\n`) // at least one escape
		for range r.IntN(3) {
			b.WriteString(parts[r.IntN(len(parts))])
		}
		b.WriteByte('"')
		raw := b.String()
		var want string
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatal(err)
		}
		got, err := stringContent(value{kind: kindString, raw: []byte(raw), escaped: true}, scratch)
		if err != nil || string(got) != want {
			t.Fatalf("text of %s = %q, %v; want %q", raw, got, err, want)
		}
		scratch = got[:0]
	}
}
