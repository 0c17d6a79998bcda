// Package leak finds a test's secrets (passwords, keys) in what a program printed or wrote: as
// text, and inside the base64 that job graphs wrap serialized transforms in (the Dataflow job's
// JSON holds base64 of protocol buffers that hold the DoFns' JSON), to any depth that decoding
// reaches.
package leak

import (
	"bytes"
	"encoding/base64"
	"regexp"
	"testing"
)

// maxDepth bounds how many layers of base64 Found decodes.
const maxDepth = 4

// base64Run matches a run of base64 text long enough to hold a secret (12 bytes are 16
// characters), in the standard and the URL alphabets.
var base64Run = regexp.MustCompile(`[A-Za-z0-9+/_-]{16,}={0,2}`)

// Found reports whether data holds secret: as it is, or in base64 text found in data, in the
// data that decodes from it, and so on (see maxDepth).
func Found(data []byte, secret string) bool {
	if secret == "" {
		return false
	}
	return found(data, []byte(secret), 0)
}

func found(data, secret []byte, depth int) bool {
	if bytes.Contains(data, secret) {
		return true
	}
	if depth == maxDepth {
		return false
	}
	for _, run := range base64Run.FindAll(data, -1) {
		for _, dec := range decodings(run) {
			if found(dec, secret, depth+1) {
				return true
			}
		}
	}
	return false
}

// decodings returns what run decodes to in the encodings it may be in, padded or not.
func decodings(run []byte) [][]byte {
	s := string(bytes.TrimRight(run, "="))
	var out [][]byte
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		// A run may start mid-way through a longer text: try it whole, and cut to a multiple of
		// four characters at each of the offsets a boundary may fall on.
		for off := range 4 {
			if off >= len(s) {
				break
			}
			t := s[off:]
			t = t[:len(t)-len(t)%4]
			if b, err := enc.DecodeString(t); err == nil {
				out = append(out, b)
			}
		}
		if b, err := enc.DecodeString(s); err == nil {
			out = append(out, b)
		}
	}
	return out
}

// Check fails the test when data holds one of secrets, naming what (never the secret).
func Check(t testing.TB, what string, data []byte, secrets ...string) {
	t.Helper()
	for i, s := range secrets {
		if Found(data, s) {
			t.Errorf("%s holds test secret #%d (as text or in base64)", what, i+1)
		}
	}
}
