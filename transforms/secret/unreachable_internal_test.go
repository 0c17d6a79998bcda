package secret

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"testing"
)

// TestUnreachableOnlyForTheNetwork: a Cloud Storage read is said to be out of reach for a
// failure of the network or the deadline, not for one of credentials or certificates that the
// client gives in the same *url.Error.
func TestUnreachableOnlyForTheNetwork(t *testing.T) {
	for _, tc := range []struct {
		name        string
		err         error
		unreachable bool
	}{
		{"credentials", &url.Error{Op: "Get", URL: "https://storage.googleapis.com/b/o", Err: errors.New(`oauth2: "invalid_grant"`)}, false},
		{"certificate", &url.Error{Op: "Get", URL: "https://storage.googleapis.com/b/o", Err: errors.New("x509: certificate signed by unknown authority")}, false},
		{"refused", &url.Error{Op: "Get", URL: "https://storage.googleapis.com/b/o", Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}}, true},
		{"no such host", &url.Error{Op: "Get", URL: "https://storage.googleapis.com/b/o", Err: &net.DNSError{Err: "no such host", Name: "storage.googleapis.com"}}, true},
		{"deadline", context.DeadlineExceeded, true},
	} {
		msg := objectError("gs://b/o", tc.err).Error()
		if got := strings.Contains(msg, "cannot reach Cloud Storage"); got != tc.unreachable {
			t.Errorf("%s: %q: unreachable %v, want %v", tc.name, msg, got, tc.unreachable)
		}
	}
}
