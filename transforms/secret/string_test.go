package secret_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/secret"
)

// A String never prints a password given as text, by any route but Reveal and the JSON of the
// job graph; a secret version's name shows as it is.
func TestStringCannotPrintItself(t *testing.T) {
	const pw = "s3cr3t-Pw"
	const version = "projects/p/secrets/ch/versions/latest"
	type holder struct {
		Password secret.String
		N        int
	}
	for _, tc := range []struct {
		s    secret.String
		want string // what every route shows
	}{
		{secret.String(pw), secret.Mask},
		{secret.String(version), version},
		{"", ""},
	} {
		var logged bytes.Buffer
		slog.New(slog.NewTextHandler(&logged, nil)).Info("m", "password", tc.s, "holder", holder{tc.s, 1})
		slog.New(slog.NewJSONHandler(&logged, nil)).Info("m", "password", tc.s)
		text, _ := tc.s.MarshalText()
		shown := []string{
			tc.s.String(), fmt.Sprint(tc.s), fmt.Sprintf("%s|%v|%q|%x|%+v|%#v|%10s", tc.s, tc.s, tc.s, tc.s, tc.s, tc.s, tc.s),
			fmt.Sprintf("%v %+v %#v", holder{tc.s, 1}, holder{tc.s, 1}, holder{tc.s, 1}), string(text), logged.String(),
			tc.s.Hide("a " + tc.s.Reveal() + " b"),
		}
		for _, out := range shown {
			if strings.Contains(out, pw) {
				t.Errorf("%q shown as %q", tc.s.String(), out)
			}
		}
		if got := tc.s.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
		if !strings.Contains(fmt.Sprintf("%v", holder{tc.s, 1}), "{"+tc.want+" 1}") {
			t.Errorf("%%v of a struct = %v, want the field shown as %q", holder{tc.s, 1}, tc.want)
		}
		// The job graph carries the value: a DoFn's fields go through encoding/json.
		b, err := json.Marshal(holder{tc.s, 1})
		var back holder
		if err == nil {
			err = json.Unmarshal(b, &back)
		}
		if err != nil || back.Password.Reveal() != tc.s.Reveal() {
			t.Errorf("JSON round trip of %q: %s, %v", tc.want, b, err)
		}
	}
	if got := secret.String(pw).Hide("user:" + pw + "@host " + pw); got != "user:xxxxx@host xxxxx" {
		t.Errorf("Hide = %q", got)
	}
	if got := secret.ShownRef("-----BEGIN PRIVATE KEY-----\nMIIE"); got != secret.Mask {
		t.Errorf("ShownRef of PEM text = %q", got)
	}
	if got := secret.ShownRef(base64Key); got != secret.Mask {
		t.Errorf("ShownRef of a PEM body without its lines = %q", got)
	}
	// A key's body of another form than DER's (an OpenSSH private key's), pasted by mistake.
	const openSSHBody = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZWQyNTUxOQAAACB7"
	if got := secret.ShownRef(openSSHBody); got != secret.Mask {
		t.Errorf("ShownRef of an OpenSSH key's body = %q", got)
	}
	// A whole PEM file in base64, as a Kubernetes secret holds it.
	const pemInBase64 = "LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tCk1JSUV2QUlCQURBTkJna3Foa2lHOXcwQkFRRUZBQVND"
	if got := secret.ShownRef(pemInBase64); got != secret.Mask {
		t.Errorf("ShownRef of a PEM file in base64 = %q", got)
	}
	if got := secret.ShownRef("/etc/ssl/private/client.key"); got != "/etc/ssl/private/client.key" {
		t.Errorf("ShownRef of a path = %q", got)
	}
}
