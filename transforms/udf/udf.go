// Package udf is the JavaScript UDF stage, between the source and the parse stage: each message's
// payload goes through a user-defined JavaScript function, as in Google's Dataflow templates
// (javascriptTextTransformGcsPath, javascriptTextTransformFunctionName,
// javascriptTextTransformReloadIntervalMinutes), and its result is what the parse stage
// converts.
//
// The function is called as function(payload, message): payload is the message's data as a
// string (decoded as UTF-8; a payload that is not valid UTF-8 is a dead letter before any call,
// as it is without a UDF), message is {messageId, attributes, publishTime}, passed to every
// function whatever parameters it declares (Google's templates pass the payload alone). It
// returns the JSON text to convert, or null, undefined or "" to drop the message on purpose:
// the message is acknowledged and counted, never converted. A function that throws, returns
// anything else or more than 16 MiB, runs longer than Config.Timeout (1 s by default) on a
// message, or takes more memory than its process may have (4 GiB of address space) sends that
// message to the dead letter, with the payload as published and the JavaScript error and line
// (and at most 20 frames of its stack); the messages behind it go on.
//
// The file is compiled in a helper process of each DoFn instance (this same executable, run
// again: see sandbox.go), with goja, a JavaScript engine written in Go (ECMAScript 5.1 and most
// of ES6, no Node.js or browser APIs, no console). goja stops JavaScript code at the timeout,
// but not a built-in function that runs long (a regular expression that backtracks, JSON.stringify
// of a value that shares its parts, join of a sparse array); the helper's watchdog, or the
// stage, then ends the process killGrace (250 ms) later, and a new process takes the next
// message, about 10 ms later: a message that does not return costs the timeout and 0.25 s. The
// helper's state (its global variables) starts afresh then. With Config.Reload, each instance
// reads the file again that often and, when it changed, uses the new function; a new file that
// does not load is logged and the current function kept.
//
// Metrics, in the Beam namespace PubSubToClickHouse: counters udf-transformed (messages passed on
// to the parse stage), udf-dropped (messages the function dropped), udf-failed (messages sent to
// the dead letter), udf-reloads (new versions of the file loaded by a worker) and udf-restarts
// (helper processes ended by a call that overran its bound in a built-in, ran out of memory or
// crashed, and started again).
package udf

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"cloud.google.com/go/storage"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
)

var (
	udfTransformed = beam.NewCounter(flow.Namespace, "udf-transformed")
	udfDropped     = beam.NewCounter(flow.Namespace, "udf-dropped")
	udfFailed      = beam.NewCounter(flow.Namespace, "udf-failed")
	udfReloads     = beam.NewCounter(flow.Namespace, "udf-reloads")
	udfRestarts    = beam.NewCounter(flow.Namespace, "udf-restarts")
)

func init() {
	register.DoFn5x1[context.Context, flow.Messages, func(flow.Messages), func(flow.DeadLetter), func([]string), error](&udfFn{})
	register.Emitter1[flow.Messages]()
	register.Emitter1[flow.DeadLetter]()
	register.Emitter1[[]string]()
}

// DefaultTimeout is the longest the function may run on one message when Config.Timeout is 0.
const DefaultTimeout = time.Second

// dropLogEvery is how often a worker logs how many messages the function dropped.
const dropLogEvery = time.Minute

// Config is what the UDF stage needs.
type Config struct {
	// Path is the file, javascriptTextTransformGcsPath: gs://<bucket>/<object>, or a local path
	// (local runs).
	Path string
	// Function is the global function to call, javascriptTextTransformFunctionName.
	Function string
	// Reload is how often each worker reads the file again; 0 never
	// (javascriptTextTransformReloadIntervalMinutes).
	Reload time.Duration
	// Timeout bounds each call, per message; 0 is DefaultTimeout (1 s).
	Timeout time.Duration
}

// timeout returns Timeout, or DefaultTimeout when it is 0.
func (c Config) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

// Transform applies the function of cfg to each message of msgs (a PCollection<flow.Message>).
// It returns the transformed messages (PCollection<flow.Message>, Data the function's output,
// Original the payload as published, Transformed true), the dead letters of the messages it
// failed on (PCollection<flow.DeadLetter>) and the ack ids of the messages it dropped
// (PCollection<[]string>, one id each, for the acknowledging stage; none on Dataflow, whose
// messages carry no ack id). It panics at construction when cfg has no path or function.
func Transform(s beam.Scope, cfg Config, msgs beam.PCollection) (transformed, deadLetters, dropped beam.PCollection) {
	s = s.Scope("UDF")
	if cfg.Path == "" || cfg.Function == "" {
		panic(fmt.Sprintf("udf.Transform: the path (%q) and the function (%q) are both needed", cfg.Path, cfg.Function))
	}
	return beam.ParDo3(s, &udfFn{Config: cfg}, msgs)
}

// loader reads the file of a Config, with a Cloud Storage client for a gs:// path, and builds
// its function.
type loader struct {
	Config
	client *storage.Client
}

// open creates the Cloud Storage client when the path is a gs:// one.
func (l *loader) open(ctx context.Context) error {
	if !IsGCS(l.Path) || l.client != nil {
		return nil
	}
	if _, _, ok := splitGCS(l.Path); !ok {
		return fmt.Errorf("javascriptTextTransformGcsPath %q is not gs://<bucket>/<object>", l.Path)
	}
	var err error
	// The client keeps its context: it must outlive a cancelled caller. Reads go through the JSON
	// API (the same permission, storage.objects.get), which Cloud Storage stand-ins such as
	// fake-gcs-server serve as the service does.
	if l.client, err = storage.NewClient(context.WithoutCancel(ctx), storage.WithJSONReads()); err != nil {
		if strings.Contains(err.Error(), "could not find default credentials") {
			return fmt.Errorf("javascriptTextTransformGcsPath %s: no credentials for Cloud Storage: reading a gs:// file needs "+
				"Application Default Credentials (gcloud auth application-default login, or GOOGLE_APPLICATION_CREDENTIALS naming a "+
				"service account's key file); a local run may give the file's local path instead (%w)", l.Path, err)
		}
		return fmt.Errorf("javascriptTextTransformGcsPath %s: creating the Cloud Storage client: %w", l.Path, err)
	}
	return nil
}

func (l *loader) close() {
	if l.client != nil {
		l.client.Close()
		l.client = nil
	}
}

// load reads the file and builds its function. The errors name the parameter at fault:
// javascriptTextTransformGcsPath for a file that cannot be read, does not compile or whose
// top-level code throws, javascriptTextTransformFunctionName for a file without the function.
func (l *loader) load(ctx context.Context) (*sandbox, []byte, error) {
	src, err := readFile(ctx, l.client, l.Path)
	if err != nil {
		return nil, nil, fmt.Errorf("javascriptTextTransformGcsPath %s: reading the file: %w", l.Path, err)
	}
	fn, err := l.build(src)
	return fn, src, err
}

// build starts the function of src in its helper process (sandbox.go).
func (l *loader) build(src []byte) (*sandbox, error) {
	fn, err := openSandbox(loadRequest{Name: l.Path, Source: src, Function: l.Function, Timeout: l.timeout(), LoadTimeout: loadTimeout, MaxOutput: maxOutputBytes})
	if err != nil {
		var (
			missing *MissingFunctionError
			syntax  *syntaxError
		)
		switch {
		case errors.As(err, &missing):
			return nil, fmt.Errorf("javascriptTextTransformFunctionName %q: %s: %w", l.Function, l.Path, err)
		case errors.As(err, &syntax):
			return nil, fmt.Errorf("javascriptTextTransformGcsPath %s: the file is not valid JavaScript: %w", l.Path, err)
		}
		return nil, fmt.Errorf("javascriptTextTransformGcsPath %s: %w", l.Path, err)
	}
	return fn, nil
}

// udfFn applies the function. Exported fields are its configuration (serialised to workers); the
// runtime is built in Setup.
type udfFn struct {
	Config

	loader loader
	fn     *sandbox
	src    []byte    // the source fn was built from
	readAt time.Time // the last reading of the file, failed or not
	// reloading receives the outcome of the reload under way, built off the messages' path;
	// nil when none is.
	reloading chan reloaded
	failedSrc []byte    // the last source that did not load: not built again until it changes
	dropped   int64     // messages dropped since the last log line
	logged    time.Time // when the drops were last logged
}

// Setup reads the file and builds the function. A file that cannot be read, does not compile or
// lacks the function fails here, before any message is processed.
func (f *udfFn) Setup(ctx context.Context) error {
	f.loader = loader{Config: f.Config}
	if err := f.loader.open(ctx); err != nil {
		return err
	}
	fn, src, err := f.loader.load(ctx)
	if err != nil {
		return err
	}
	f.fn, f.src, f.readAt = fn, src, time.Now()
	return nil
}

// reloaded is the outcome of a reload: the function built from src, or err; unchanged when the
// file is the current function's or the last one that failed.
type reloaded struct {
	fn        *sandbox
	src       []byte
	err       error
	readErr   bool
	unchanged bool
}

// reload reads the file again when Reload has passed and, when it changed, builds its function,
// in a goroutine of its own: a file that is slow to load (its top-level code may run for up to
// loadTimeout, 30 s) holds up no message, which the current function goes on transforming. The
// next call after the build takes the new function; a failure keeps the current one, and the
// same failing source is not built again until the file changes.
func (f *udfFn) reload(ctx context.Context) {
	if f.reloading != nil {
		select {
		case r := <-f.reloading:
			f.reloading = nil
			f.reloaded(ctx, r)
		default:
			return // still under way
		}
	}
	if f.Reload <= 0 || time.Since(f.readAt) < f.Reload {
		return
	}
	f.readAt = time.Now()
	f.reloading = make(chan reloaded, 1)
	go func(ctx context.Context, out chan<- reloaded, current, failed []byte) {
		ctx, cancel := context.WithTimeout(ctx, reloadReadTimeout)
		defer cancel()
		src, err := readFile(ctx, f.loader.client, f.Path)
		switch {
		case err != nil:
			out <- reloaded{err: err, readErr: true}
		case string(src) == string(current) || string(src) == string(failed):
			out <- reloaded{unchanged: true}
		default:
			fn, err := f.loader.build(src)
			out <- reloaded{fn: fn, src: src, err: err}
		}
	}(context.WithoutCancel(ctx), f.reloading, f.src, f.failedSrc)
}

// reloadReadTimeout bounds a reload's reading of the file (a Cloud Storage client retries a
// stalled read until its context ends).
const reloadReadTimeout = time.Minute

// aboutSource reports whether a build's error is the source's own (a syntax error, the function
// missing, its top-level code throwing or running past loadTimeout), which the same source would
// give again, rather than the helper process's (it could not be started).
func aboutSource(err error) bool {
	var (
		e       *Error
		missing *MissingFunctionError
		syntax  *syntaxError
	)
	return errors.As(err, &e) || errors.As(err, &missing) || errors.As(err, &syntax)
}

// reloaded takes the outcome of a reload.
func (f *udfFn) reloaded(ctx context.Context, r reloaded) {
	switch {
	case r.unchanged:
	case r.readErr:
		slog.Warn("javascript UDF: reading the file again failed; keeping the current function", "path", f.Path, "function", f.Function, "error", r.err)
	case r.err != nil && aboutSource(r.err):
		f.failedSrc = r.src
		slog.Warn("javascript UDF: the file changed but does not load; keeping the current function (this version is not tried again until the file changes)",
			"path", f.Path, "function", f.Function, "error", r.err)
	case r.err != nil:
		slog.Warn("javascript UDF: the file changed but its function could not be started; keeping the current function, and trying again at the next reload",
			"path", f.Path, "function", f.Function, "error", r.err)
	default:
		f.fn.close()
		f.fn, f.src, f.failedSrc = r.fn, r.src, nil
		udfReloads.Inc(ctx, 1)
		slog.Info("javascript UDF: the file changed; using the new function", "path", f.Path, "function", f.Function)
	}
}

// ProcessElement applies the function to the messages of one source element and emits the
// transformed ones, as elements of at most maxElementBytes of output each (a heartbeat, without
// messages, passes on); the dropped ones' ack ids go out as one []string. It fails only when the
// function's process cannot be started again after a call ended it, which is no fault of the
// messages: the bundle fails (Dataflow retries it; on the local runner the run ends, and gives
// back the messages it had not acknowledged).
func (f *udfFn) ProcessElement(ctx context.Context, ms flow.Messages, emit func(flow.Messages), emitDeadLetter func(flow.DeadLetter), emitDropped func([]string)) error {
	f.reload(ctx)
	if len(ms.Messages) == 0 {
		emit(ms)
		return nil
	}
	var (
		out      flow.Messages
		outBytes int
		dropped  []string
	)
	err := applyAll(f.fn, ms.Messages, func(r result) {
		switch r.outcome {
		case transformed:
			udfTransformed.Inc(ctx, 1)
			out.Messages = append(out.Messages, r.msg)
			if outBytes += len(r.msg.Data); outBytes >= maxElementBytes {
				emit(out)
				out, outBytes = flow.Messages{}, 0
			}
		case failed:
			udfFailed.Inc(ctx, 1)
			emitDeadLetter(NewDeadLetter(r.msg, r.err))
		case droppedByUDF:
			udfDropped.Inc(ctx, 1)
			f.countDrop(r.msg)
			if r.msg.AckID != "" {
				dropped = append(dropped, r.msg.AckID)
			}
		}
	})
	udfRestarts.Inc(ctx, int64(f.fn.takeRestarts()))
	if err != nil {
		return err
	}
	if len(out.Messages) > 0 {
		emit(out)
	}
	if len(dropped) > 0 {
		emitDropped(dropped)
	}
	return nil
}

// maxElementBytes is the most output the stage gathers into one element before it emits it:
// the function's outputs may each be 16 MiB, and an element of thousands of them would not fit
// a worker's memory.
const maxElementBytes = 16 << 20

// outcome is what the function made of a message.
type outcome int

const (
	transformed  outcome = iota // the message, with its Data the function's output
	failed                      // a dead letter
	droppedByUDF                // nothing: the function returned null, undefined or ""
)

// result is what the function made of one message: the transformed message, or the message as
// it came with what happened and the error of a failure.
type result struct {
	msg     flow.Message
	outcome outcome
	err     error
}

// applyAll applies fn to each of msgs and gives each result to deliver, in the order of msgs,
// as it comes. A payload that is not valid UTF-8 fails without a call, with the error the parse
// stage gives it (convert.CheckUTF8): JavaScript would see U+FFFD in place of its bad bytes, and
// the message would be stored changed. The error is sandbox.apply's: a process that cannot be
// started again.
func applyAll(fn *sandbox, msgs []flow.Message, deliver func(result)) error {
	calls := make([]call, 0, len(msgs))
	var invalid map[int]error // by index in msgs: the payloads that are not UTF-8, checked once
	for i, m := range msgs {
		if err := convert.CheckUTF8(m.Data); err != nil {
			if invalid == nil {
				invalid = map[int]error{}
			}
			invalid[i] = err
			continue
		}
		info := messageInfo{ID: m.ID, Attributes: m.Attributes}
		if m.PublishTimeMillis != 0 {
			info.PublishTime = time.UnixMilli(m.PublishTimeMillis)
		}
		calls = append(calls, call{Payload: m.Data, Info: info})
	}
	next := 0 // the message of the next reply
	// The messages that fail without a call are delivered in their place.
	skip := func() {
		for ; next < len(msgs) && invalid[next] != nil; next++ {
			deliver(result{msg: msgs[next], outcome: failed, err: invalid[next]})
		}
	}
	skip()
	err := fn.apply(calls, func(r reply) {
		m := msgs[next]
		next++
		switch {
		case r.Err != nil:
			deliver(result{msg: m, outcome: failed, err: r.Err})
		case r.Dropped:
			deliver(result{msg: m, outcome: droppedByUDF})
		default:
			m.Original, m.Data, m.Transformed = m.Data, []byte(r.Out), true
			deliver(result{msg: m, outcome: transformed})
		}
		skip()
	})
	return err
}

// countDrop counts a dropped message and logs the drops in aggregate: the first at once, then
// at most once a minute, and the rest at Teardown.
func (f *udfFn) countDrop(m flow.Message) {
	f.dropped++
	if f.logged.IsZero() {
		slog.Info("javascript UDF dropped a message (it returned null, undefined or an empty string); further drops are logged once a minute, and counted by the metric udf-dropped",
			"function", f.Function, "message", m.ID)
		f.dropped, f.logged = 0, time.Now()
		return
	}
	if time.Since(f.logged) >= dropLogEvery {
		f.logDrops()
	}
}

func (f *udfFn) logDrops() {
	if f.dropped == 0 {
		return
	}
	slog.Info("javascript UDF dropped messages", "function", f.Function, "messages", f.dropped, "since", f.logged.UTC().Format(time.RFC3339))
	f.dropped, f.logged = 0, time.Now()
}

// Teardown logs the drops not yet logged, ends the function's process and closes the Cloud
// Storage client.
func (f *udfFn) Teardown() error {
	f.logDrops()
	if f.fn != nil {
		f.fn.close()
	}
	if f.reloading != nil {
		// The reload under way ends within reloadReadTimeout and loadTimeout; its function, if
		// any, is closed then, and the loader's client after it.
		go func(in <-chan reloaded, l loader) {
			if r := <-in; r.fn != nil {
				r.fn.close()
			}
			l.close()
		}(f.reloading, f.loader)
		f.reloading = nil
		return nil
	}
	f.loader.close()
	return nil
}

// NewDeadLetter builds the dead-letter record of a message the function failed on: the payload
// as published, the error ("javascript UDF <function> failed: ... at line N, column C") and a
// stack trace that ends with the JavaScript stack.
func NewDeadLetter(m flow.Message, err error) flow.DeadLetter {
	trace := flow.StackTrace("udf", "", err)
	if e, ok := err.(*Error); ok && e.Stack != "" {
		trace += "\njavascript stack:\n" + indent(e.Stack)
	}
	return flow.DeadLetter{
		Payload:        m.Published(),
		ErrorMessage:   err.Error(),
		StackTrace:     trace,
		FailedAtMillis: time.Now().UnixMilli(),
		MessageID:      m.ID,
		Attributes:     m.Attributes,
		OrderingKey:    m.OrderingKey,
		AckID:          m.AckID,
	}.BoundErrors()
}

func indent(s string) string { return "  " + strings.ReplaceAll(s, "\n", "\n  ") }
