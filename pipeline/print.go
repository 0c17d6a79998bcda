// The printing of the parameters, which never shows the ClickHouse password: String, GoString
// and Format of Options, and the redaction of clickHouseUrl.

package pipeline

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/secret"
)

// String returns all parameters on one line, as flag=value in flag order,
// for start-up logging: strings quoted, unset optional integers as "unset".
// The password shows as "xxxxx" when non-empty (and as "" when empty, the
// default user's case); clickHouseUrl shows as [Options.RedactedURL], and so
// does every other string parameter, so that neither the password nor a URL
// with a password pasted into the wrong parameter shows.
func (o Options) String() string {
	r := o.redact()
	var b strings.Builder
	for i, p := range parameters {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(p.name + "=")
		switch f := p.field(&r); p.kind {
		case kindString, kindURL, kindRef:
			b.WriteString(strconv.Quote(*f.(*string)))
		case kindSecret:
			b.WriteString(strconv.Quote(f.(*secret.String).String()))
		case kindOptionalInt:
			b.WriteString(f.(*OptionalInt).show())
		case kindInt:
			b.WriteString(strconv.Itoa(*f.(*int)))
		case kindBool:
			b.WriteString(strconv.FormatBool(*f.(*bool)))
		}
	}
	return b.String()
}

// GoString returns Options as a Go composite literal (the %#v verb), with
// the password hidden as in [Options.String].
func (o Options) GoString() string {
	type plain Options // no methods, so %#v prints the fields
	s := fmt.Sprintf("%#v", plain(o.redact()))
	return strings.Replace(s, "plain{", "Options{", 1)
}

// Format implements [fmt.Formatter], so that no verb prints the password:
// %#v prints [Options.GoString], any other verb formats [Options.String].
func (o Options) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = io.WriteString(f, o.GoString())
		return
	}
	_, _ = fmt.Fprintf(f, fmt.FormatString(f, verb), o.String())
}

// Redacted returns a copy of o whose values may be shown one by one, as in a log line's fields:
// hidden as [Options.String] hides them (among them clickHousePassword wherever it appears in
// another parameter). It is for showing only: a pipeline built from it would not connect.
func (o Options) Redacted() Options { return o.redact() }

// redact returns a copy of o fit to print: the password "xxxxx" when
// non-empty (a Secret Manager secret version's name as it is), PEM text in
// place of a certificate's or key's name "xxxxx", and every other string as
// [Options.RedactedURL] shows the URL, which also covers a URL pasted into the
// wrong parameter.
func (o Options) redact() Options {
	r := o
	for _, p := range parameters {
		switch s := p.field(&r).(type) {
		case *string:
			if p.kind == kindRef {
				*s = secret.ShownRef(*s)
			} else {
				*s = o.ClickHousePassword.Hide(chclient.RedactURL(*s))
			}
		case *secret.String:
			*s = secret.String(s.String()) // a secret version's name, or the mask
		}
	}
	return r
}

// RedactedURL returns clickHouseUrl with its passwords replaced by "xxxxx":
// the password of the userinfo (user:password@), the value of a "password"
// query parameter, the password in an "http_proxy" query parameter (both of
// which the ClickHouse driver reads), and any occurrence of
// clickHousePassword. It reads the URL as text so as to work on malformed
// URLs too; when in doubt it hides too much rather than too little (for
// example, everything from the first ":" after the scheme up to an "@" found
// later in the path).
func (o Options) RedactedURL() string {
	return o.ClickHousePassword.Hide(chclient.RedactURL(o.ClickHouseURL))
}
