package chclient

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2"
)

func TestClassify(t *testing.T) {
	ex := func(code int32) error {
		return fmt.Errorf("INSERT: %w", &clickhouse.Exception{Code: code, Name: "DB::Exception", Message: "m"})
	}
	for _, tc := range []struct {
		name string
		err  error
		want Class
	}{
		{"connection refused", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, Transient},
		{"EOF", io.ErrUnexpectedEOF, Transient},
		{"memory limit", ex(241), Memory},
		{"no space left on device (18.16)", ex(75), Transient},
		{"file access error (18.16)", ex(1000), Transient},
		{"too many partitions for one block", &clickhouse.Exception{Code: 252, Message: "Too many partitions for single INSERT block (more than 100)."}, Memory},
		{"too many parts", ex(252), Transient},
		{"too many simultaneous queries", ex(202), Transient},
		{"timeout", ex(159), Transient},
		{"socket timeout", ex(209), Transient},
		{"network error", ex(210), Transient},
		{"read-only replica", ex(242), Transient},
		{"keeper", ex(999), Transient},
		{"a table lock that timed out", &clickhouse.Exception{Code: 473, Message: `READ locking attempt on "db.t" has timed out! (120000ms) Possible deadlock avoided. Client should retry.`}, Transient},
		{"a replicated table being restarted", ex(733), Transient},
		{"a table dropped or detached under the INSERT", ex(218), Refused},
		{"a Distributed table whose cluster left remote_servers", ex(170), Refused},
		{"no zookeeper", ex(225), Transient},
		{"throwIf", ex(395), Data},
		{"division by zero", ex(153), Data},
		{"bad UUID", ex(376), Data},
		{"array sizes", ex(190), Data},
		{"cannot parse", ex(6), Data},
		{"column dropped", ex(16), Schema},
		{"column made MATERIALIZED (18.16)", &clickhouse.Exception{Code: 44, Message: "Cannot insert column m, because it is MATERIALIZED column."}, Schema},
		{"another ILLEGAL_COLUMN", &clickhouse.Exception{Code: 44, Message: "Illegal column String of argument of function toUInt32"}, Unknown},
		{"an INSERT's data cut short", ex(33), Transient},
		{"an INSERT's stream cut", ex(23), Transient},
		{"append error", &AppendError{Column: "c", Err: errors.New("x")}, Schema},
		{"access denied", ex(497), Refused},
		{"authentication failed", ex(516), Refused},
		{"table dropped", ex(60), Refused},
		{"storage takes no INSERT", ex(48), Refused},
		{"a settings profile's constraint", &clickhouse.Exception{Code: 452, Message: "Setting max_insert_block_size should not be changed"}, Refused},
		{"an unknown element of an Enum in a CAST (18.16)", ex(49), Unknown},
		{"a bad separator", ex(36), Unknown},
		{"read after EOF of a parsed value", ex(32), Unknown},
		{"a code nobody listed", ex(12345), Unknown},
		{"a proxy's 413, the body too large", fmt.Errorf("batch sendStreamQuery: %w", &clickhouse.HTTPError{StatusCode: 413, Err: errors.New(`response body: "<html>413</html>"`)}), Memory},
		{"a proxy's 502", fmt.Errorf("batch sendStreamQuery: %w", &clickhouse.HTTPError{StatusCode: 502, Err: errors.New(`response body: "<html>502</html>"`)}), Transient},
		{"a server exception with status 413: by its code", fmt.Errorf("batch sendStreamQuery: %w", &clickhouse.HTTPError{StatusCode: 413, Err: &clickhouse.Exception{Code: 12345}}), Unknown},
	} {
		if got := Classify(tc.err); got != tc.want {
			t.Errorf("%s: Classify = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestCodeListsDisjoint: a code is in at most one list, so its class does not depend on the
// order of the checks.
func TestCodeListsDisjoint(t *testing.T) {
	seen := map[int32]string{}
	for name, m := range map[string]map[int32]string{"data": dataCodes, "schema": schemaCodes, "memory": memoryCodes, "transient": transientCodes, "refused": refusedCodes} {
		for code := range m {
			if other, ok := seen[code]; ok {
				t.Errorf("code %d is in the %s and the %s lists", code, other, name)
			}
			seen[code] = name
		}
	}
}

// TestServerError: the server's exception is taken out of the transport's wrapping, so that a row
// rejected over HTTP has the same error text as over the native protocol.
func TestServerError(t *testing.T) {
	ex := &clickhouse.Exception{Code: 469, Name: "DB::Exception", Message: "Constraint `c` for table t is violated at row 1."}
	plain := errors.New("connection reset by peer")
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"native protocol", ex, "code: 469, message: Constraint `c` for table t is violated at row 1."},
		{"clickhouse-go's HTTP transport", fmt.Errorf("batch sendStreamQuery: %w", &clickhouse.HTTPError{StatusCode: 500, Err: ex}),
			"code: 469, message: Constraint `c` for table t is violated at row 1."},
		{"no server exception", fmt.Errorf("send: %w", plain), "send: connection reset by peer"},
	} {
		if got := ServerError(tc.err).Error(); got != tc.want {
			t.Errorf("%s: ServerError(%q) = %q, want %q", tc.name, tc.err, got, tc.want)
		}
	}
}

// TestBoundServerMessage: a server exception's long message is cut in its middle, the exception
// itself (native protocol) or in what wrapped it (HTTP transport: "batch sendStreamQuery:
// [HTTP 500] "), with its code and class kept; a short one, and an error without one, are
// returned as they are.
func TestBoundServerMessage(t *testing.T) {
	long := "Cannot parse string '" + strings.Repeat("a", 1<<20) + "' as UInt8: syntax error at begin of string"
	const rule = "' as UInt8: syntax error at begin of string"
	native := &clickhouse.Exception{Code: 6, Name: "DB::Exception", Message: long}
	overHTTP := fmt.Errorf("batch sendStreamQuery: %w", &clickhouse.HTTPError{StatusCode: 500, Err: &clickhouse.Exception{Code: 6, Message: long}})
	for _, err := range []error{native, overHTTP} {
		got := BoundServerMessage(err)
		ex := ServerError(got).(*clickhouse.Exception)
		if len(ex.Message) > MaxServerMessageBytes || !strings.HasPrefix(ex.Message, "Cannot parse string 'aaa") || !strings.HasSuffix(ex.Message, rule) {
			t.Errorf("%T: message of %d bytes %.100q…, want at most %d bytes ending %q", err, len(ex.Message), ex.Message, MaxServerMessageBytes, rule)
		}
		if code, _ := Code(got); code != 6 || Classify(got) != Data {
			t.Errorf("%T: code %d, class %v, want 6 and data", err, code, Classify(got))
		}
		if text := got.Error(); len(text) > MaxServerMessageBytes+100 || !strings.HasSuffix(text, rule) {
			t.Errorf("%T: text of %d bytes %.100q…", err, len(text), text)
		}
	}
	if got := BoundServerMessage(overHTTP).Error(); !strings.HasPrefix(got, "batch sendStreamQuery: [HTTP 500] code: 6, message: Cannot parse") {
		t.Errorf("text %.100q…, want what wrapped the exception kept", got)
	}
	short := &clickhouse.Exception{Code: 6, Message: "Cannot parse string 'a' as UInt8"}
	other := errors.New(long)
	for _, err := range []error{short, other, nil} {
		if got := BoundServerMessage(err); got != err {
			t.Errorf("BoundServerMessage(%.60v) = %.60v, want it as it is", err, got)
		}
	}
}
