//go:build chdb

package main

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/ClickHouse/ch-go/compress"
	"github.com/andybalholm/brotli"
	"github.com/google/uuid"
	"github.com/klauspost/compress/zstd"
)

// server is ClickHouse's HTTP interface over the engine.
type server struct {
	engine *engine
	logf   func(format string, args ...any) // each request in one line; nil for none
}

// reservedParams are the URL parameters that are neither settings nor query parameters (the
// list of ClickHouse's HTTPHandler, plus the query, the database and the default format).
var reservedParams = map[string]bool{
	"compress": true, "decompress": true, "user": true, "password": true, "quota_key": true,
	"query_id": true, "stacktrace": true, "buffer_size": true, "wait_end_of_query": true,
	"session_id": true, "session_timeout": true, "session_check": true,
	"client_protocol_version": true, "close_session": true,
	"query": true, "database": true, "default_format": true,
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/ping":
		io.WriteString(w, "Ok.\n")
		return
	case r.URL.Path != "/":
		http.Error(w, fmt.Sprintf("There is no handle %s\n\nUse / or /ping for health checks.", r.URL.Path), http.StatusNotFound)
		return
	case r.Method == http.MethodGet && !r.URL.Query().Has("query"):
		io.WriteString(w, "Ok.\n")
		return
	}
	queryID := r.URL.Query().Get("query_id")
	if queryID == "" {
		queryID = r.Header.Get("X-ClickHouse-Query-Id")
	}
	if queryID == "" {
		queryID = uuid.NewString()
	}
	h := w.Header()
	// ClickHouse's own spelling of its headers (Header.Set would write X-Clickhouse-...).
	h["X-ClickHouse-Query-Id"] = []string{queryID}
	h["X-ClickHouse-Server-Display-Name"] = []string{s.engine.hostname}
	h["X-ClickHouse-Timezone"] = []string{s.engine.timezone}
	out, format, sql, err := s.handle(r)
	if s.logf != nil {
		outcome := fmt.Sprintf("%d bytes", len(out))
		if err != nil {
			outcome = err.Error()
		}
		s.logf("%s %.200q: %.300s", r.Method, strings.Join(strings.Fields(sql), " "), outcome)
	}
	if err != nil {
		s.fail(w, err)
		return
	}
	h["X-ClickHouse-Format"] = []string{format}
	h.Set("Content-Type", contentType(format))
	if out, err = compressResponse(out, r); err != nil {
		s.fail(w, err)
		return
	}
	if enc := responseEncoding(r); enc != "" && len(out) > 0 {
		h.Set("Content-Encoding", enc)
		var buf bytes.Buffer
		if err := encode(&buf, enc, out); err != nil {
			s.fail(w, err)
			return
		}
		out = buf.Bytes()
	}
	h.Set("Content-Length", strconv.Itoa(len(out)))
	w.Write(out)
}

// handle runs the request's statement and returns its output, the output's format and the
// statement.
func (s *server) handle(r *http.Request) (out []byte, format, sql string, err error) {
	params := r.URL.Query()
	if params.Has("session_id") {
		return nil, "", "", exception(48, "NOT_IMPLEMENTED", "HTTP sessions (session_id) are not served by this stand-in: every request has a session of its own")
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
		return nil, "", "", exception(48, "NOT_IMPLEMENTED", "external tables (multipart/form-data) are not served by this stand-in")
	}
	body, err := readBody(r)
	if err != nil {
		return nil, "", "", err
	}
	req := request{
		database: firstOf(r.Header.Get("X-ClickHouse-Database"), params.Get("database")),
		format:   firstOf(r.Header.Get("X-ClickHouse-Format"), params.Get("default_format"), "TabSeparated"),
	}
	for name, values := range params {
		switch {
		case strings.HasPrefix(name, "param_"):
			req.params = append(req.params, [2]string{strings.TrimPrefix(name, "param_"), values[0]})
		case !reservedParams[name] && name != "":
			req.settings = append(req.settings, [2]string{name, values[0]})
		}
	}
	// The query is the URL's query parameter followed by the body, as a server reads them; an
	// INSERT whose query parameter ends with its format's name takes the body as its data.
	var st statement
	if q := params.Get("query"); q != "" {
		st = parseStatement(q)
		if st.insertData() && strings.TrimSpace(q[st.formatEnd:]) == "" && len(body) > 0 {
			req.sql, req.data, req.hasData = q[:st.formatEnd], body, true
		} else {
			req.sql = q + string(body)
		}
	} else {
		req.sql = string(body)
	}
	if !req.hasData {
		st = parseStatement(req.sql)
		if st.insertData() {
			if start := dataStart(req.sql, st.formatEnd); start < len(req.sql) {
				req.data, req.hasData = []byte(req.sql[start:]), true
			}
			req.sql = req.sql[:st.formatEnd]
		}
	}
	if strings.TrimSpace(req.sql) == "" {
		return nil, "", "", exception(62, "SYNTAX_ERROR", "Empty query")
	}
	if r.Method == http.MethodGet && !readOnlyKinds[st.kind] {
		return nil, "", req.sql, exception(164, "READONLY", "Cannot execute query in readonly mode. For queries over HTTP, method GET implies readonly. You should use method POST for modifying queries")
	}
	format = req.format
	if st.format != "" && st.kind != "INSERT" {
		format = st.format
	}
	if out, err = s.engine.run(req); err != nil {
		return nil, "", req.sql, err
	}
	if isHandshake(req.sql) && params.Has("client_protocol_version") && strings.EqualFold(format, "Native") {
		revision, err := strconv.ParseUint(params.Get("client_protocol_version"), 10, 64)
		if err != nil {
			return nil, "", req.sql, exception(27, "CANNOT_PARSE_INPUT_ASSERTION_FAILED", fmt.Sprintf("client_protocol_version %q is not a number", params.Get("client_protocol_version")))
		}
		out, err = handshake(out, revision)
		return out, format, req.sql, err
	}
	return out, format, req.sql, nil
}

func firstOf(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

// readBody returns the request's body, decoded: first the Content-Encoding (gzip, deflate, br,
// zstd), then ClickHouse's own compressed blocks when decompress=1.
func readBody(r *http.Request) ([]byte, error) {
	var in io.Reader = r.Body
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity", "none":
	case "gzip":
		zr, err := gzip.NewReader(in)
		if err != nil {
			return nil, exception(354, "ZLIB_INFLATE_FAILED", "the request body is not gzip: "+err.Error())
		}
		in = zr
	case "deflate":
		zr, err := zlib.NewReader(in)
		if err != nil {
			return nil, exception(354, "ZLIB_INFLATE_FAILED", "the request body is not deflate (zlib): "+err.Error())
		}
		in = zr
	case "br":
		in = brotli.NewReader(in)
	case "zstd":
		zr, err := zstd.NewReader(in)
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		in = zr
	default:
		return nil, exception(48, "NOT_IMPLEMENTED", fmt.Sprintf("Content-Encoding %q is not decoded by this stand-in (gzip, deflate, br, zstd are)", enc))
	}
	body, err := io.ReadAll(in)
	if err != nil {
		return nil, exception(271, "CANNOT_DECOMPRESS", "the request body as its Content-Encoding says: "+err.Error())
	}
	if r.URL.Query().Get("decompress") != "1" {
		return body, nil
	}
	var out bytes.Buffer
	if _, err := io.Copy(&out, compress.NewReader(bytes.NewReader(body))); err != nil && !errors.Is(err, io.EOF) {
		var corrupt *compress.CorruptedDataErr
		if errors.As(err, &corrupt) {
			return nil, exception(40, "CHECKSUM_DOESNT_MATCH", "the compressed request body (decompress=1): "+err.Error())
		}
		return nil, exception(271, "CANNOT_DECOMPRESS", "the compressed request body (decompress=1): "+err.Error())
	}
	return out.Bytes(), nil
}

// compressBlockSize is the size of the uncompressed data in each of ClickHouse's compressed
// blocks (DBMS_DEFAULT_BUFFER_SIZE, 1 MiB).
const compressBlockSize = 1 << 20

// compressResponse returns out in ClickHouse's compressed blocks when the request says compress=1,
// with network_compression_method (LZ4 by default, ZSTD, NONE).
func compressResponse(out []byte, r *http.Request) ([]byte, error) {
	params := r.URL.Query()
	if params.Get("compress") != "1" || len(out) == 0 {
		return out, nil
	}
	method := compress.LZ4
	if m := params.Get("network_compression_method"); m != "" {
		var err error
		if method, err = compress.MethodString(strings.ToUpper(m)); err != nil {
			return nil, exception(89, "UNKNOWN_COMPRESSION_METHOD", fmt.Sprintf("Unknown compression method '%s'", m))
		}
	}
	level, _ := strconv.Atoi(params.Get("network_zstd_compression_level"))
	cw := compress.NewWriter(compress.Level(level), method)
	var buf []byte
	for len(out) > 0 {
		n := min(len(out), compressBlockSize)
		if err := cw.Compress(out[:n]); err != nil {
			return nil, exception(270, "CANNOT_COMPRESS", err.Error())
		}
		buf = append(buf, cw.Data...)
		out = out[n:]
	}
	return buf, nil
}

// responseEncoding returns the Content-Encoding of the response: one the client accepts, only
// when enable_http_compression=1, as a server does.
func responseEncoding(r *http.Request) string {
	if r.URL.Query().Get("enable_http_compression") != "1" {
		return ""
	}
	accepted := strings.ToLower(r.Header.Get("Accept-Encoding"))
	for _, enc := range []string{"zstd", "br", "gzip", "deflate"} {
		if strings.Contains(accepted, enc) {
			return enc
		}
	}
	return ""
}

func encode(w io.Writer, enc string, data []byte) error {
	var cw io.WriteCloser
	switch enc {
	case "gzip":
		cw = gzip.NewWriter(w)
	case "deflate":
		cw = zlib.NewWriter(w)
	case "br":
		cw = brotli.NewWriter(w)
	case "zstd":
		zw, err := zstd.NewWriter(w)
		if err != nil {
			return err
		}
		cw = zw
	}
	if _, err := cw.Write(data); err != nil {
		return err
	}
	return cw.Close()
}

// fail answers with the exception as a server does: the status of its error code
// (ClickHouse's exceptionCodeToHTTPStatus), X-ClickHouse-Exception-Code, and the text.
func (s *server) fail(w http.ResponseWriter, err error) {
	var ee *engineError
	if !errors.As(err, &ee) {
		ee = exception(1001, "STD_EXCEPTION", err.Error())
	}
	h := w.Header()
	h["X-ClickHouse-Exception-Code"] = []string{strconv.Itoa(ee.code)}
	h.Set("Content-Type", "text/plain; charset=UTF-8")
	w.WriteHeader(httpStatus(ee.name))
	io.WriteString(w, ee.text+"\n")
}

// contentType is the Content-Type a server gives output in format.
func contentType(format string) string {
	f := strings.ToLower(format)
	switch {
	case strings.HasPrefix(f, "tabseparated") || strings.HasPrefix(f, "tsv"):
		return "text/tab-separated-values; charset=UTF-8"
	case strings.HasPrefix(f, "json"):
		return "application/json; charset=UTF-8"
	case strings.HasPrefix(f, "csv"):
		return "text/csv; charset=UTF-8; header=absent"
	case f == "native" || strings.HasPrefix(f, "rowbinary") || f == "parquet" || f == "arrow" || f == "orc" || f == "avro":
		return "application/octet-stream"
	}
	return "text/plain; charset=UTF-8"
}

// httpStatus is ClickHouse's exceptionCodeToHTTPStatus (src/Server/HTTP/exceptionCodeToHTTPStatus.cpp),
// by the error's name.
func httpStatus(name string) int {
	switch name {
	case "REQUIRED_PASSWORD":
		return http.StatusUnauthorized
	case "UNKNOWN_USER", "WRONG_PASSWORD", "AUTHENTICATION_FAILED", "SET_NON_GRANTED_ROLE", "ACCESS_DENIED":
		return http.StatusForbidden
	case "BAD_ARGUMENTS", "CANNOT_COMPILE_REGEXP", "CANNOT_PARSE_TEXT", "CANNOT_PARSE_ESCAPE_SEQUENCE",
		"CANNOT_PARSE_QUOTED_STRING", "CANNOT_PARSE_DATE", "CANNOT_PARSE_DATETIME", "CANNOT_PARSE_NUMBER",
		"CANNOT_PARSE_DOMAIN_VALUE_FROM_STRING", "CANNOT_PARSE_IPV4", "CANNOT_PARSE_IPV6",
		"CANNOT_PARSE_INPUT_ASSERTION_FAILED", "CANNOT_PARSE_UUID", "DUPLICATE_COLUMN", "ILLEGAL_COLUMN",
		"UNKNOWN_ELEMENT_IN_AST", "UNKNOWN_TYPE_OF_AST_NODE", "THERE_IS_NO_COLUMN", "TOO_DEEP_AST",
		"TOO_BIG_AST", "UNEXPECTED_AST_STRUCTURE", "SYNTAX_ERROR", "INCORRECT_DATA", "TYPE_MISMATCH",
		"VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE":
		return http.StatusBadRequest
	case "UNKNOWN_TABLE", "UNKNOWN_FUNCTION", "UNKNOWN_IDENTIFIER", "UNKNOWN_TYPE", "UNKNOWN_STORAGE",
		"UNKNOWN_DATABASE", "UNKNOWN_SETTING", "UNKNOWN_DIRECTION_OF_SORTING", "UNKNOWN_AGGREGATE_FUNCTION",
		"UNKNOWN_FORMAT", "UNKNOWN_DATABASE_ENGINE", "UNKNOWN_TYPE_OF_QUERY", "UNKNOWN_ROLE":
		return http.StatusNotFound
	case "QUERY_IS_TOO_LARGE":
		return http.StatusRequestEntityTooLarge
	case "NOT_IMPLEMENTED":
		return http.StatusNotImplemented
	case "SOCKET_TIMEOUT", "CANNOT_OPEN_FILE", "CANNOT_SCHEDULE_TASK":
		return http.StatusServiceUnavailable
	case "HTTP_LENGTH_REQUIRED":
		return http.StatusLengthRequired
	case "TIMEOUT_EXCEEDED":
		return http.StatusRequestTimeout
	case "UNSUPPORTED_MEDIA_TYPE":
		return http.StatusUnsupportedMediaType
	}
	return http.StatusInternalServerError
}
