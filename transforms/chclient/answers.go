package chclient

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
)

// An HTTP answer of 200 OK is not always a success. ClickHouse sends its status line as soon as
// it has something to send, and an exception raised after that can only follow in the body:
//
//   - with send_progress_in_http_headers, the first X-ClickHouse-Progress header sends 200 OK,
//     and a failure after it is written to the body as text, "Code: 395. DB::Exception: ..."
//     (ClickHouse issue 33205); servers from 25.x frame it between "__exception__" markers,
//     and servers before that do not;
//   - from 23.x to about 24.8, a server whose read of an INSERT's body timed out answered 200 OK
//     with X-ClickHouse-Exception-Code: 209 and no body, having stored nothing (ClickHouse issue
//     65117).
//
// clickhouse-go v2.51.0 reads only the framed form, and only for an INSERT of its batch API
// (insertResponseError); its Exec reads no answer at all. So an INSERT that failed this way on a
// server before 25.x was taken for stored: its messages were acknowledged and their rows lost.
//
// checkedAnswers is the round tripper of every http:// and https:// connection (parseURL sets it
// as clickhouse-go's TransportFunc). It turns a 200 OK that says the statement failed into the
// answer of a failure, status 500 with the same headers and body, which clickhouse-go then reads
// as it reads any failure (the body decompressed, framed or bare, the code from the text or from
// X-ClickHouse-Exception-Code): a *clickhouse.Exception of the server's code (so Classify treats
// it as it would the same failure over the native protocol), or, when the body holds no
// exception, an error holding the body (Transient: retried). The error shows "[HTTP 500]",
// which is this rewriting's, not the server's. A 200 OK says the statement failed when:
//
//   - it carries X-ClickHouse-Exception-Code with a code other than 0, whatever the statement;
//   - or it answers an INSERT with a body that is not empty or white space once decoded from its
//     Content-Encoding (gzip, deflate, br or zstd, as enable_http_compression gives it): a server
//     answers a stored INSERT with an empty body, so a body there is an exception, or the page of
//     something that is not ClickHouse (a proxy's), which stored nothing either.
//
// Only an INSERT's body is judged: the other statements that usually answer nothing do not
// always (an ALTER ... ON CLUSTER of addNewColumnsOnCluster answers with the status of each
// host), and the answers of statements that return a result (SELECT, DESCRIBE, ...) are left to
// clickhouse-go, which finds a framed exception among their data.
type checkedAnswers struct{ next http.RoundTripper }

// A redirect is never followed. ClickHouse sends none; one comes from something in front of it,
// and Go's HTTP client would follow it with the request's headers, among them X-ClickHouse-Key,
// the password of an https:// connection, to whatever host the redirect names, over plain HTTP
// if it says so; and it would follow a 301, 302 or 303 with a GET without the request's body, so
// that an INSERT would reach the server, if at all, without its rows. So checkedAnswers returns
// a *RedirectError instead of the answer, which the client does not follow (a failure of the
// transport: Classify says Transient, and the INSERT is retried).

// RedirectError is an answer of 301, 302, 303, 307 or 308, which the pipeline does not follow.
type RedirectError struct {
	Status   string // "307 Temporary Redirect"
	Location string // where it redirects to, its secrets hidden (RedactURL)
}

func (e *RedirectError) Error() string {
	return fmt.Sprintf("the server answered %s to %q, a redirect, which the pipeline does not follow (the request's password "+
		"would go with it): give %s the address that answers the queries itself", e.Status, e.Location, FieldURL)
}

// redirect reports whether Go's HTTP client follows an answer of this status.
func redirect(status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// answerLimit is how much of the body of a 200 OK to a statement without result checkedAnswers
// reads (an exception's text is at most 16 KiB).
const answerLimit = 1 << 20

func (t checkedAnswers) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if redirect(resp.StatusCode) {
		resp.Body.Close()
		return nil, &RedirectError{Status: resp.Status, Location: RedactURL(resp.Header.Get("Location"))}
	}
	if resp.StatusCode != http.StatusOK {
		return resp, err
	}
	code := resp.Header.Get(exceptionCodeHeader)
	failed := code != "" && code != "0"
	if !failed && !isInsert(statementOf(req)) {
		return resp, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, answerLimit))
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("reading the answer (HTTP 200 OK) to a statement: %w", err)
	}
	if !failed && emptyAnswer(body, resp.Header.Get("Content-Encoding")) {
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return resp, nil
	}
	if len(bytes.TrimSpace(body)) == 0 {
		// The code alone (issue 65117): clickhouse-go would make an exception of it with an
		// empty message.
		body = fmt.Appendf(nil, "Code: %s. The server answered HTTP 200 OK with %s: %s and no text: the statement failed "+
			"after the server had begun its answer", code, exceptionCodeHeader, code)
		resp.Header = resp.Header.Clone()
		resp.Header.Del("Content-Encoding") // the text above is plain
	}
	resp.StatusCode = http.StatusInternalServerError
	resp.Status = strconv.Itoa(http.StatusInternalServerError) + " " + http.StatusText(http.StatusInternalServerError)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return resp, nil
}

// exceptionCodeHeader is the header in which ClickHouse names the code of an exception that it
// raised before sending its headers.
const exceptionCodeHeader = "X-ClickHouse-Exception-Code"

// statementOf returns the start of the SQL statement of a request as clickhouse-go sends it: the
// URL parameter query (an INSERT of the batch API: "INSERT INTO ... FORMAT Native", its data in
// the body), or else the body (Exec and Query send the statement as the body, which they can give
// again: GetBody), "" when neither holds one.
func statementOf(req *http.Request) string {
	if q := req.URL.Query().Get("query"); q != "" {
		return q
	}
	if req.GetBody == nil || req.Header.Get("Content-Type") != "" && !strings.HasPrefix(req.Header.Get("Content-Type"), "text/") {
		return "" // data, not a statement (external tables, or a body clickhouse-go cannot give again)
	}
	body, err := req.GetBody()
	if err != nil {
		return ""
	}
	defer body.Close()
	head := make([]byte, 64)
	n, _ := io.ReadFull(body, head)
	return string(head[:n])
}

// isInsert reports whether the SQL statement stmt is an INSERT: its first word, in any case.
func isInsert(stmt string) bool {
	word := strings.TrimLeft(stmt, " \t\r\n(")
	if i := strings.IndexAny(word, " \t\r\n("); i >= 0 {
		word = word[:i]
	}
	return strings.EqualFold(word, "INSERT")
}

// emptyAnswer reports whether body, of the Content-Encoding encoding, holds nothing but white
// space once decoded: a server that compresses its answers (enable_http_compression) may send
// the frame of an empty text. A body that does not decode as its encoding says is not empty.
func emptyAnswer(body []byte, encoding string) bool {
	if len(bytes.TrimSpace(body)) == 0 {
		return true
	}
	var r io.Reader
	switch strings.ToLower(strings.TrimSpace(encoding)) {
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return false
		}
		r = zr
	case "deflate": // ClickHouse's deflate is zlib's format (RFC 1950), as clickhouse-go reads it
		zr, err := zlib.NewReader(bytes.NewReader(body))
		if err != nil {
			return false
		}
		r = zr
	case "br":
		r = brotli.NewReader(bytes.NewReader(body))
	case "zstd":
		zr, err := zstd.NewReader(bytes.NewReader(body))
		if err != nil {
			return false
		}
		defer zr.Close()
		r = zr
	default:
		return false
	}
	text, err := io.ReadAll(io.LimitReader(r, answerLimit))
	return err == nil && len(bytes.TrimSpace(text)) == 0
}
