// The JavaScript side of the stage: reading the file, compiling it once per content, a runtime
// with the function, and one call with its bound and its errors.

package udf

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"cloud.google.com/go/storage"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/text"
	"github.com/dop251/goja"
)

const (
	// maxFileBytes is the largest UDF file read: a UDF is a small script.
	maxFileBytes = 16 << 20
	// maxCallDepth bounds the JavaScript call stack, so that a runaway recursion fails the
	// message with a RangeError-like error instead of exhausting the worker's memory.
	maxCallDepth = 10_000
)

// readFile returns the bytes of path: gs://bucket/object through client (which honours
// STORAGE_EMULATOR_HOST), any other path from the local file system. client may be nil for a
// local path.
func readFile(ctx context.Context, client *storage.Client, path string) ([]byte, error) {
	var r io.ReadCloser
	if bucket, object, ok := splitGCS(path); ok {
		if client == nil {
			return nil, errors.New("no Cloud Storage client")
		}
		or, err := client.Bucket(bucket).Object(object).NewReader(ctx)
		if err != nil {
			return nil, err
		}
		r = or
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		r = f
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, maxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxFileBytes {
		return nil, fmt.Errorf("larger than %d MiB, which is not a UDF", maxFileBytes>>20)
	}
	return b, nil
}

// IsGCS reports whether path is a Cloud Storage path, gs://...
func IsGCS(path string) bool { return strings.HasPrefix(path, "gs://") }

// splitGCS splits gs://bucket/object; ok is false for another path or a gs:// path without a
// bucket or an object.
func splitGCS(path string) (bucket, object string, ok bool) {
	rest, ok := strings.CutPrefix(path, "gs://")
	if !ok {
		return "", "", false
	}
	bucket, object, ok = strings.Cut(rest, "/")
	return bucket, object, ok && bucket != "" && object != ""
}

// programs are the compiled files of this process, by the hash of their name and source: each
// content is compiled once, whatever the number of runtimes (a goja.Program may be run by several
// runtimes at once).
var programs struct {
	sync.Mutex
	byHash map[[32]byte]*goja.Program
}

// compile returns the program of src, named name in positions and stacks, from the cache when
// it was compiled before. A syntax error is returned as goja reports it, with its position.
func compile(name string, src []byte) (*goja.Program, error) {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write(src)
	var key [32]byte
	h.Sum(key[:0])
	programs.Lock()
	defer programs.Unlock()
	if p, ok := programs.byHash[key]; ok {
		return p, nil
	}
	p, err := goja.Compile(name, string(src), false)
	if err != nil {
		return nil, err
	}
	if programs.byHash == nil {
		programs.byHash = map[[32]byte]*goja.Program{}
	}
	programs.byHash[key] = p
	return p, nil
}

// function is the UDF in a runtime of its own, in the helper process (helper.go). It is not safe
// for concurrent use.
type function struct {
	name    string // the function's name, javascriptTextTransformFunctionName
	timeout time.Duration
	// maxOutput is the longest output, in bytes; 0 for no bound.
	maxOutput int
	rt        *goja.Runtime
	call      goja.Callable
	defined   []string // the global functions, as the top-level code left them
	// repeated is the first name that an object of a text JSON.parse read during the running
	// call holds twice (watchJSONParse), or nil.
	repeated *repeatedName

	mu       sync.Mutex // guards deadline and the interrupt, between a call and the timer
	deadline time.Time  // when the running call is stopped; zero when none runs
	timer    *time.Timer
}

// errTimeout is what the timer interrupts a call with.
var errTimeout = errors.New("timeout")

// newFunction runs prg's top-level code in a new runtime and finds the global function name in
// it. The errors are a *Error (the top-level code threw) or a *MissingFunctionError.
func newFunction(prg *goja.Program, name string, timeout, loadTimeout time.Duration) (*function, error) {
	// The top-level code, and the reading of the globals it left (a getter is JavaScript too),
	// run under loadTimeout: set-up code (a lookup table built) may take longer than a call, and
	// runs again in each new process.
	f := &function{name: name, timeout: loadTimeout, rt: goja.New()}
	f.rt.SetMaxCallStackSize(maxCallDepth)
	if err := f.watchJSONParse(); err != nil {
		return nil, err
	}
	f.timer = time.AfterFunc(time.Hour, f.interrupt)
	f.timer.Stop()
	var (
		call    goja.Callable
		found   string
		defined []string
	)
	// What the name holds before the file runs: a built-in (String, eval) or one the global
	// object inherits (constructor, toString). The file must define the function itself.
	builtin := f.rt.Get(name)
	_, err := f.guard(func() (goja.Value, error) {
		if _, err := f.rt.RunProgram(prg); err != nil {
			return nil, err
		}
		v := f.rt.Get(name)
		var ok bool
		switch call, ok = goja.AssertFunction(v); {
		case !ok:
			found = typeOf(v)
		case builtin != nil && v.SameAs(builtin):
			call, found = nil, "JavaScript's own, not a function of the file"
		}
		defined = f.globalFunctions()
		return nil, nil
	})
	if err != nil {
		return nil, f.describe(err, "running the file's top-level code failed: ")
	}
	if call == nil {
		return nil, &MissingFunctionError{Function: name, Found: found, Defined: defined}
	}
	f.call, f.defined, f.timeout = call, defined, timeout
	return f, nil
}

// loadTimeout bounds the file's top-level code: 30 s (a variable for the tests).
var loadTimeout = 30 * time.Second

// globalFunctions lists the global functions of the runtime, sorted; it runs JavaScript (a
// global may be a getter), so it is called under the guard.
func (f *function) globalFunctions() []string {
	var names []string
	g := f.rt.GlobalObject()
	for _, k := range g.Keys() {
		if _, ok := goja.AssertFunction(g.Get(k)); ok {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	return names
}

// messageInfo is what the function's second argument holds, with the names of Pub/Sub's JSON
// representation of a message: {messageId, attributes, publishTime}.
type messageInfo struct {
	ID          string
	Attributes  map[string]string
	PublishTime time.Time
}

// Apply calls the function on payload and m, passed to every function whatever the parameters
// it declares (JavaScript allows it: a function(payload) ignores the second argument, and one
// whose second parameter has a default, function(payload, message = {}), which JavaScript
// counts as taking one, still receives it). It returns the function's string, or drop when the
// function returned null, undefined or "" (the message is dropped on purpose). A throw, a result
// that is not a string or is longer than maxOutput, a call longer than the timeout or a call
// stack deeper than maxCallDepth is a *Error. It is invoke, then result.
func (f *function) Apply(payload string, m messageInfo) (out string, drop bool, err error) {
	v, err := f.invoke(payload, m)
	return f.result(v, err, payload, m)
}

// invoke calls the function on payload and m, under the timeout: the part of Apply that runs
// JavaScript, and so the part that the helper's watchdog bounds. It returns what the function
// returned, or its failure as a *Error.
func (f *function) invoke(payload string, m messageInfo) (goja.Value, error) {
	f.repeated = nil
	v, err := f.guard(func() (goja.Value, error) {
		// Built under the guard: the script may have changed Object.prototype.
		return f.call(goja.Undefined(), f.rt.ToValue(payload), f.messageArg(m))
	})
	if err != nil {
		return nil, f.describe(err, "")
	}
	return v, nil
}

// result turns what invoke gave for payload and m into Apply's outcome: the checks of the
// stage's own on the value the function returned (its type, its size, a lone surrogate, a field
// JSON.parse read twice, a number JSON.parse rounded). They run no JavaScript, and take time in
// proportion to the payload and the output (a tenth of a second for megabytes of long numbers),
// which is not the function's: the helper runs them outside the call's bound, so that a function
// that returns within it is never stopped for them.
func (f *function) result(v goja.Value, err error, payload string, m messageInfo) (out string, drop bool, _ error) {
	if err != nil {
		return "", false, err
	}
	if r := f.repeated; r != nil {
		// Whatever the function made of it, a row or a drop, it read one of the two values.
		where := ""
		if r.at != "" {
			where = " at " + r.at
		}
		return "", false, &Error{Function: f.name, Reason: fmt.Sprintf("JSON.parse read an object%s that holds the field %q twice, and "+
			"keeps only the last value, so which one is meant is ambiguous; the message is dead-lettered rather than stored "+
			"with one of them, as it is without a function (have the producer send each field once)", where, r.name)}
	}
	switch {
	case v == nil || goja.IsUndefined(v) || goja.IsNull(v):
		return "", true, nil
	case goja.IsString(v):
		// A string of n UTF-16 units is at least n bytes of UTF-8: a huge one is refused before
		// it is copied.
		if js, ok := v.(goja.String); ok && f.maxOutput > 0 && js.Length() > f.maxOutput {
			return "", false, f.tooLong(js.Length())
		}
		s := v.String()
		if f.maxOutput > 0 && len(s) > f.maxOutput {
			return "", false, f.tooLong(len(s))
		}
		// Go's string of a JavaScript string holds U+FFFD for each lone surrogate: the output
		// would be stored changed. Only an output that holds U+FFFD can have had one.
		if js, ok := v.(goja.String); ok && strings.ContainsRune(s, utf8.RuneError) {
			if i, unit := loneSurrogate(js); i >= 0 {
				return "", false, &Error{Function: f.name, Reason: fmt.Sprintf(
					"returned a string holding a lone UTF-16 surrogate (\\u%04X at index %d), which has no UTF-8 form: "+
						"it would be stored as U+FFFD, so the message is dead-lettered instead", unit, i)}
			}
		}
		// The message id and the attributes are strings the function may make numbers of too.
		others := messageSources(m)
		if r := roundingOf(payload, others...); r != nil {
			if err := r.check(s, payload, others...); err != nil {
				return "", false, &Error{Function: f.name, Reason: err.Error()}
			}
		}
		return s, s == "", nil
	}
	return "", false, &Error{Function: f.name, Reason: fmt.Sprintf(
		"returned %s, not a string: return the JSON text to convert (JSON.stringify(...)), or null or undefined to drop the message", typeOf(v))}
}

// repeatedName is a name that an object of a text JSON.parse read holds twice, and where that
// object is in the text (convert.RepeatedKey).
type repeatedName struct{ name, at string }

// watchJSONParse puts in JSON.parse's place, before the file runs, a function that notes in
// f.repeated the first name an object of the text holds twice, then parses as JSON.parse does
// (a reviver too): JSON.parse keeps the last of the two values (ECMA-262, JSON.parse), so a
// function that parses the payload would pass one of them on as if the message held no other,
// where the same message without a function is a dead letter (convert.FieldTwice). What
// JSON.parse throws, and a timeout within it, go on to the function as they would.
func (f *function) watchJSONParse() error {
	json := f.rt.Get("JSON").ToObject(f.rt)
	parse, ok := goja.AssertFunction(json.Get("parse"))
	if !ok {
		return errors.New("javascript UDF: the runtime's JSON.parse is not a function")
	}
	watched := func(call goja.FunctionCall) goja.Value {
		if f.repeated == nil && len(call.Arguments) > 0 {
			if text, ok := call.Arguments[0].(goja.String); ok { // not an object's toString: JSON.parse calls that itself
				if name, at, found := convert.RepeatedKey([]byte(text.String())); found {
					f.repeated = &repeatedName{name: name, at: at}
				}
			}
		}
		v, err := parse(call.This, call.Arguments...)
		if err != nil {
			if len(call.Arguments) > 0 {
				if text, ok := call.Arguments[0].(goja.String); ok {
					if why := parseFailure(text.String(), err); why != "" {
						if e, cerr := f.rt.New(f.rt.Get("SyntaxError"), f.rt.ToValue(why)); cerr == nil {
							panic(e) // thrown as goja's own would be, with a message that says why
						}
					}
				}
			}
			panic(err) // thrown on: a *goja.Exception to the function's catch, a timeout to the call's end
		}
		return v
	}
	fn := f.rt.ToValue(watched).ToObject(f.rt)
	// JSON.parse's own name and length (ECMA-262): a stack trace reads "at parse (native)".
	if err := fn.DefineDataProperty("name", f.rt.ToValue("parse"), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE); err != nil {
		return err
	}
	if err := fn.DefineDataProperty("length", f.rt.ToValue(2), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE); err != nil {
		return err
	}
	return json.DefineDataProperty("parse", fn, goja.FLAG_TRUE, goja.FLAG_FALSE, goja.FLAG_TRUE)
}

// beyondDouble matches the error goja's JSON.parse throws for a number beyond a double's range:
// it reads JSON with Go's encoding/json, whose text this is.
var beyondDouble = regexp.MustCompile(`cannot unmarshal number (\S+) into Go value of type float64`)

// parseFailure returns the message of the SyntaxError JSON.parse throws on s in place of
// goja's (err), which speaks of Go: for a text that starts with a byte order mark, which JSON text
// may not (RFC 8259, section 8.1), and V8's JSON.parse refuses too; and for a number beyond a
// double's range, which goja's refuses where V8's reads Infinity. "" for any other failure.
func parseFailure(s string, err error) string {
	if strings.HasPrefix(s, "\uFEFF") {
		return `JSON.parse: the text starts with a byte order mark (U+FEFF), which JSON text may not (RFC 8259, section 8.1): ` +
			`remove it first (text.replace(/^\uFEFF/, "")), or, when the text is the payload, have the publisher leave it out`
	}
	if m := beyondDouble.FindStringSubmatch(err.Error()); m != nil {
		return fmt.Sprintf("JSON.parse: the number %s is beyond a JavaScript number's range (about 1.8e308); this engine's JSON.parse "+
			"refuses it (others read it as Infinity, which JSON.stringify writes as null)", text.Cut(m[1], 100))
	}
	return ""
}

// loneSurrogate returns the index and value of the first UTF-16 unit of s that is a surrogate
// without its pair (a high one not followed by a low one, or a low one alone), or -1.
func loneSurrogate(s goja.String) (int, uint16) {
	for i, n := 0, s.Length(); i < n; i++ {
		switch c := s.CharAt(i); {
		case c >= 0xD800 && c <= 0xDBFF:
			if i+1 < n {
				if next := s.CharAt(i + 1); next >= 0xDC00 && next <= 0xDFFF {
					i++
					continue
				}
			}
			return i, c
		case c >= 0xDC00 && c <= 0xDFFF:
			return i, c
		}
	}
	return -1, 0
}

// tooLong is the error of an output of at least n bytes.
func (f *function) tooLong(n int) *Error {
	return &Error{Function: f.name, Reason: fmt.Sprintf("returned %d bytes or more, beyond the %d MiB a UDF's output may hold", n, f.maxOutput>>20)}
}

// messageArg returns m as a JavaScript object. Its properties are defined as own data
// properties, so that neither a setter the script put on Object.prototype nor an attribute named
// __proto__ changes what the function receives.
func (f *function) messageArg(m messageInfo) goja.Value {
	attrs := f.rt.NewObject()
	for _, k := range slices.Sorted(maps.Keys(m.Attributes)) { // in key order, every time
		attrs.DefineDataProperty(k, f.rt.ToValue(m.Attributes[k]), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE)
	}
	publish := ""
	if !m.PublishTime.IsZero() {
		publish = m.PublishTime.UTC().Format(text.MillisUTC)
	}
	obj := f.rt.NewObject()
	obj.DefineDataProperty("messageId", f.rt.ToValue(m.ID), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE)
	obj.DefineDataProperty("attributes", attrs, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE)
	obj.DefineDataProperty("publishTime", f.rt.ToValue(publish), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE)
	return obj
}

// guard runs fn, which runs JavaScript, under the timeout: the timer interrupts the runtime
// once the deadline has passed. A panic of the engine is returned as an error, and the
// runtime's interrupt flag is always clear afterwards.
func (f *function) guard(fn func() (goja.Value, error)) (v goja.Value, err error) {
	f.mu.Lock()
	f.deadline = time.Now().Add(f.timeout)
	f.mu.Unlock()
	f.timer.Reset(f.timeout)
	defer func() {
		f.mu.Lock()
		f.deadline = time.Time{}
		f.rt.ClearInterrupt() // an interrupt that came after the call ended
		f.mu.Unlock()
		f.timer.Stop()
		if p := recover(); p != nil {
			// An interrupt inside a built-in that calls back into JavaScript (a getter) may
			// come as a panic.
			if ie, ok := p.(*goja.InterruptedError); ok {
				err = ie
			} else {
				err = fmt.Errorf("the JavaScript engine failed: %v", p)
			}
		}
	}()
	return fn()
}

// interrupt is the timer's function: it stops the running call once its deadline has passed. A
// timer that fires late for a call that has ended, or early for the next one, does nothing to it.
func (f *function) interrupt() {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.deadline.IsZero():
	case time.Now().Before(f.deadline):
		f.timer.Reset(time.Until(f.deadline))
	default:
		f.rt.Interrupt(errTimeout)
	}
}

// describe turns an error of goja into a *Error of f, its reason prefixed with prefix.
func (f *function) describe(err error, prefix string) *Error {
	e := &Error{Function: f.name}
	var frames []goja.StackFrame
	var interrupted *goja.InterruptedError
	var overflow *goja.StackOverflowError
	var thrown *goja.Exception
	switch {
	case errors.As(err, &interrupted):
		if prefix == "" {
			e.Reason = fmt.Sprintf("ran longer than %v on this message and was stopped", f.timeout)
		} else {
			e.Reason = fmt.Sprintf("ran longer than %v and was stopped", f.timeout)
		}
		frames = interrupted.Stack()
	case errors.As(err, &overflow):
		e.Reason = fmt.Sprintf("RangeError: the call stack exceeded %d frames (a recursion without end?)", maxCallDepth)
		frames = overflow.Stack()
	case errors.As(err, &thrown):
		v := thrown.Value()
		if obj, ok := v.(*goja.Object); ok && obj.ClassName() == "Error" {
			e.Reason = "threw " + f.text(v) // "TypeError: ..."
		} else {
			e.Reason = "threw " + typeOf(v) + ": " + f.text(v)
		}
		frames = thrown.Stack()
	default:
		e.Reason = err.Error()
	}
	e.Reason = prefix + e.Reason
	var stack strings.Builder
	for i, fr := range frames {
		p := fr.Position()
		if p.Line > 0 && e.Line == 0 {
			e.Line, e.Column = p.Line, p.Column
		}
		if i == maxStackFrames {
			fmt.Fprintf(&stack, "… %d more frames", len(frames)-i)
			break
		}
		if p.Line > 0 {
			fmt.Fprintf(&stack, "at %s (%s:%d:%d)\n", text.Cut(fr.FuncName(), maxFrameText), text.Cut(p.Filename, maxFrameText), p.Line, p.Column)
		} else {
			fmt.Fprintf(&stack, "at %s (native)\n", text.Cut(fr.FuncName(), maxFrameText))
		}
	}
	e.Stack = strings.TrimRight(stack.String(), "\n")
	return e
}

// The JavaScript stack a dead letter keeps: the innermost maxStackFrames frames (a runaway
// recursion has 10,000), each name cut to maxFrameText bytes.
const (
	maxStackFrames = 20
	maxFrameText   = 200
)

// text returns v as a string, as JavaScript's String(v) does, under the timeout: a thrown
// object's own toString is JavaScript too, and may throw or run forever.
func (f *function) text(v goja.Value) string {
	var s string
	_, err := f.guard(func() (goja.Value, error) {
		if js, ok := v.(goja.String); ok && js.Length() > maxThrownText { // cut before it is copied
			v = js.Substring(0, maxThrownText+1)
		}
		s = v.String()
		return nil, nil
	})
	var interrupted *goja.InterruptedError
	switch {
	case errors.As(err, &interrupted):
		return fmt.Sprintf("(a value whose conversion to a string ran longer than %v)", f.timeout)
	case err != nil:
		return "(a value whose conversion to a string fails)"
	}
	return text.Cut(s, maxThrownText)
}

// maxThrownText is how many bytes of a thrown value an error quotes.
const maxThrownText = 1000

// typeOf names the JavaScript type of v, with its article, as the errors show it.
func typeOf(v goja.Value) string {
	switch {
	case v == nil || goja.IsUndefined(v):
		return "undefined"
	case goja.IsNull(v):
		return "null"
	case goja.IsString(v):
		return "a string"
	case goja.IsNumber(v):
		return "a number"
	case goja.IsBigInt(v):
		return "a bigint"
	}
	if obj, ok := v.(*goja.Object); ok {
		if _, ok := goja.AssertFunction(obj); ok {
			return "a function"
		}
		switch obj.ClassName() {
		case "Array":
			return "an array"
		case "String":
			return "a String object"
		}
		return "an object"
	}
	if _, ok := v.(*goja.Symbol); ok {
		return "a symbol"
	}
	if _, ok := v.Export().(bool); ok {
		return "a boolean"
	}
	return "a value of type " + v.ExportType().String()
}

// Error is a failure of the UDF on one message (or of the file's top-level code): it threw, it
// returned something other than a string, null or undefined, or it ran longer than its bound.
type Error struct {
	Function string // the function's name
	Reason   string // what happened: "threw TypeError: ...", "returned a number, not a string: ..."
	// Line and Column are where in the file it happened, the innermost position in the file;
	// 0 when unknown (the function returned a wrong value).
	Line, Column int
	// Stack is the JavaScript stack, innermost call first, one "at <function> (<file>:<line>:<column>)"
	// per line; empty when there is none.
	Stack string
}

// Error returns "javascript UDF <function> failed: <reason> at line <line>, column <column>".
func (e *Error) Error() string {
	s := "javascript UDF " + e.Function + " failed: " + e.Reason
	if e.Line > 0 {
		s += fmt.Sprintf(" at line %d, column %d", e.Line, e.Column)
	}
	return s
}

// MissingFunctionError says that the file has no global function of the configured name.
type MissingFunctionError struct {
	Function string   // the name looked for
	Found    string   // what the name holds: "undefined", "a number", ...
	Defined  []string // the global functions the file does define
}

func (e *MissingFunctionError) Error() string {
	defined := "none"
	if len(e.Defined) > 0 {
		defined = strings.Join(e.Defined, ", ")
	}
	return fmt.Sprintf("the file defines no function %s (%s is %s; the file's global functions: %s)", e.Function, e.Function, e.Found, defined)
}
