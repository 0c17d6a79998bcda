package secret

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
)

// Mask is what stands in for a secret wherever one would be shown: printed values, logs, errors
// and arguments.
const Mask = "xxxxx"

// String is a secret given as a template parameter (clickHousePassword): the password itself,
// or the name of the Secret Manager secret version that holds it (IsVersion), which is no
// secret. It cannot print itself, as the OpenTelemetry collector's configopaque.String cannot:
// String, GoString, Format (every fmt verb, so a struct that holds one prints it masked too),
// MarshalText and LogValue give Mask for a password, the name for a secret version, and "" for
// the empty string (no password, ClickHouse's default user's). Reveal returns the value.
//
// MarshalJSON is the one way out besides Reveal, and it carries the value: Beam serialises a
// DoFn's exported fields as JSON into the job graph, which is how a password given as text
// reaches the workers (a secret version's name keeps the password out of the graph, and the
// workers read it in Setup). So never log a struct that holds a String with a JSON encoder.
type String string

// Reveal returns the secret itself: for the connection, and for hiding it in text (Hide).
func (s String) Reveal() string { return string(s) }

// IsVersion reports whether s is the name of a Secret Manager secret version.
func (s String) IsVersion() bool { return IsVersion(string(s)) }

// Text returns the password given as text: s, unless s is empty or names a secret version ("").
func (s String) Text() string {
	if s.IsVersion() {
		return ""
	}
	return string(s)
}

// String returns s as it may be shown: "" when empty, the name of a secret version as it is,
// Mask for a password.
func (s String) String() string {
	if s.Text() != "" {
		return Mask
	}
	return string(s)
}

// GoString is String quoted, so that %#v cannot print the password either.
func (s String) GoString() string { return strconv.Quote(s.String()) }

// Format implements fmt.Formatter: every verb formats String.
func (s String) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		fmt.Fprint(f, s.GoString())
		return
	}
	fmt.Fprintf(f, fmt.FormatString(f, verb), s.String())
}

// MarshalText returns String, so that text encoders (slog's text handler, flag listings) show
// no password.
func (s String) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// LogValue implements slog.LogValuer: String.
func (s String) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalJSON carries the value into the job graph; see the type's comment.
func (s String) MarshalJSON() ([]byte, error) { return json.Marshal(string(s)) }

// UnmarshalJSON reads what MarshalJSON wrote.
func (s *String) UnmarshalJSON(b []byte) error {
	var v string
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*s = String(v)
	return nil
}

// Hide replaces each occurrence of the password given as text in text by Mask; a secret
// version's name and the empty string hide nothing.
func (s String) Hide(text string) string {
	if p := s.Text(); p != "" {
		return strings.ReplaceAll(text, p, Mask)
	}
	return text
}

// ShownRef returns the name of a certificate or key (a file, a gs:// object or a secret version)
// as it may be shown: as it is, or Mask when it holds what may be a key given in place of a
// name: PEM text, or the base64 body of one without its lines (KeyText).
func ShownRef(ref string) string {
	if KeyText(ref) {
		return Mask
	}
	return ref
}

// minKeyText is the shortest run of base64 that KeyText takes for a key's text: a PEM body's
// line is 64 characters (RFC 7468), and an Ed25519 private key, the shortest, is 64 in base64.
const minKeyText = 64

// KeyText reports whether ref holds a certificate's or a key's text rather than a name: PEM
// text (a "-----BEGIN" line), or at least 64 characters of nothing but base64 (RFC 4648:
// letters, digits, +, / and =) and white space (or \n and \r written out; in quotes or not),
// with capitals, small letters and digits all present, and starting as a key's text does: a
// PEM body pasted without its lines (MIIEvAIBADANBgkqhkiG9w0...: a DER certificate or key is an
// ASN.1 SEQUENCE, byte 0x30, which base64 writes as M), a whole PEM file in base64 (as a
// Kubernetes secret holds one: LS0tLS1CRUdJTi, "-----BEGIN"), or an OpenSSH key's body
// (b3BlbnNzaC1rZXktdjE, "openssh-key-v1"), which is then refused as no name and not shown. A
// path that long is almost never without a dot, a dash or an underscore, nor of mixed case and
// digits starting so; a Secret Manager name (projects/...) or one that starts with / is a name.
func KeyText(ref string) bool {
	if strings.Contains(ref, "-----BEGIN") {
		return true
	}
	// A body pasted with its line breaks written out (\n, \r\n, as JSON writes them), or in quotes.
	body := strings.TrimSpace(strings.NewReplacer(`\r`, "\r", `\n`, "\n").Replace(ref))
	if len(body) >= 2 && (body[0] == '"' || body[0] == '\'') && body[len(body)-1] == body[0] {
		body = strings.TrimSpace(body[1 : len(body)-1])
	}
	keyStart := body != "" && body[0] == 'M' || strings.HasPrefix(body, "LS0tLS1CRUdJTi") || strings.HasPrefix(body, "b3BlbnNzaC1rZXktdjE")
	if len(body) < minKeyText || !keyStart || strings.HasPrefix(body, "/") || strings.HasPrefix(body, "projects/") {
		return false
	}
	upper, lower, digit := false, false, false
	for _, c := range []byte(body) {
		switch {
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= '0' && c <= '9':
			digit = true
		case c == '+', c == '/', c == '=', c == ' ', c == '\t', c == '\n', c == '\r':
		default:
			return false
		}
	}
	return upper && lower && digit
}

// secretWords are the words of a name whose value may be a secret: a password (or pass, passwd,
// pwd), a secret, a token, an auth, a credential.
var secretWords = []string{"pass", "pwd", "secret", "token", "auth", "credential"}

// SecretWordsPattern is secretWords as a regular expression's alternation, in any letter case
// ((?i:pass|pwd|...)), for finding name=value pairs of a secret inside a longer text.
var SecretWordsPattern = "(?i:" + strings.Join(secretWords, "|") + ")"

// SecretName reports whether a name (a flag's, a URL query parameter's, a name=value pair's)
// says its value may be a secret, by secretWords, in any letter case: what the logs and errors
// hide whatever the name, known or misspelt (--clickHousePass, ?token=).
func SecretName(name string) bool {
	l := strings.ToLower(name)
	for _, w := range secretWords {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}
