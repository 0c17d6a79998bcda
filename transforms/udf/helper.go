// The helper process: this same executable, started by a sandbox with HelperEnv set, runs the
// function on the calls it reads from file descriptor 3 and writes each reply to file descriptor
// 4, one at a time, until its input ends.

package udf

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"sync"
	"syscall"
	"time"
)

// HelperEnv is the environment variable that makes this executable the UDF's helper process:
// any program that links this package serves as its own helper, so nothing else is installed
// on a worker. Its value is the address-space limit of the helper, in bytes.
const HelperEnv = "PUBSUB_TO_CLICKHOUSE_UDF_HELPER"

func init() {
	if v, ok := os.LookupEnv(HelperEnv); ok {
		os.Exit(serveHelper(v))
	}
}

// serveHelper is the helper process's main: it limits its own memory, then serves the frames of
// file descriptors 3 (in) and 4 (out). It returns the exit status: 0 when its input ended.
func serveHelper(limit string) int {
	// An interrupt or a SIGTERM is for the worker, which drains (a terminal's Ctrl-C signals its
	// whole process group; systemd's stop, its whole control group): the call under way must
	// not fail for it. The helper ends when the worker closes its input, or dies (Pdeathsig).
	signal.Ignore(os.Interrupt, syscall.SIGTERM)
	var bytes uint64
	if _, err := fmt.Sscan(limit, &bytes); err != nil || bytes == 0 {
		fmt.Fprintf(os.Stderr, "%s=%q is not a number of bytes\n", HelperEnv, limit)
		return 2
	}
	if err := limitMemory(bytes); err != nil {
		fmt.Fprintln(os.Stderr, "limiting the UDF's memory:", err)
		return 2
	}
	// The garbage collector works harder as the heap nears the limit, instead of growing past it.
	debug.SetMemoryLimit(int64(bytes / 2))
	in := bufio.NewReaderSize(os.NewFile(3, "udf-calls"), 64<<10)
	out := bufio.NewWriterSize(os.NewFile(4, "udf-replies"), 64<<10)
	if err := serve(in, out); err != nil && !errors.Is(err, io.EOF) {
		fmt.Fprintln(os.Stderr, "UDF helper:", err)
		return 1
	}
	return 0
}

// serve loads the function from the first frame of in, replies with the outcome, then replies to
// each call frame, in order. It returns io.EOF when in ends, the normal end.
//
// Replies are flushed when the calls read so far are done (the next read may wait), or
// flushEvery after the last flush: the sandbox reads them in runs. Each call is watched: one
// that has not returned killGrace after its timeout (a built-in that goja's interrupt does not
// stop) gets its reply from the watchdog, after the replies before it, and the process exits,
// since nothing can stop that call; the sandbox starts a new process for the calls behind it.
func serve(in *bufio.Reader, out *bufio.Writer) error {
	var (
		buf       []byte
		f         frame
		fn        *function
		err       error
		mu        sync.Mutex // guards f, out and deadline, between a call and the watchdog
		deadline  time.Time  // when the running call is ended; zero when none runs
		lastFlush = time.Now()
		watchdog  *time.Timer
	)
	write := func(end bool) error {
		if err := f.writeTo(out); err != nil {
			return err
		}
		if end || in.Buffered() == 0 || time.Since(lastFlush) >= flushEvery {
			lastFlush = time.Now()
			return out.Flush()
		}
		return nil
	}
	for {
		if buf, err = readFrame(in, buf, 1<<31-1); err != nil {
			return err
		}
		d := reader{b: buf}
		switch kind := d.byte(); {
		case kind == frameLoad && fn == nil:
			l := d.load()
			if d.err != nil {
				return d.err
			}
			var loadErr error
			fn, loadErr = buildFunction(l)
			loaded(&f, fn, loadErr)
			if loadErr != nil {
				fn = nil
			}
			if err := write(true); err != nil {
				return err
			}
			if fn != nil {
				stuck := &Error{Function: fn.name, Reason: stuckReason(fn.timeout)}
				watchdog = time.AfterFunc(time.Hour, func() {
					mu.Lock()                                             // held for good when the process ends
					if deadline.IsZero() || time.Now().Before(deadline) { // a firing for a call that has ended
						mu.Unlock()
						return
					}
					f.reply(reply{Err: stuck, Ended: true})
					write(true)
					os.Exit(3)
				})
				watchdog.Stop()
			}
		case kind == frameCall && fn != nil:
			c := d.call()
			if d.err != nil {
				return d.err
			}
			mu.Lock()
			deadline = time.Now().Add(fn.timeout + killGrace)
			mu.Unlock()
			watchdog.Reset(fn.timeout + killGrace)
			payload := string(c.Payload)
			v, callErr := fn.invoke(payload, c.Info)
			watchdog.Stop()
			mu.Lock()
			deadline = time.Time{}
			// The replies held for a run are sent before the checks of a large payload: the
			// sandbox waits for each reply with a backstop of its own call's size, which a small
			// call's reply held behind these checks could outlast.
			var flushErr error
			if len(payload) >= flushBeforeChecks && out.Buffered() > 0 {
				lastFlush = time.Now()
				flushErr = out.Flush()
			}
			mu.Unlock()
			if flushErr != nil {
				return flushErr
			}
			// The stage's own checks of the output, after the watchdog: they are not the
			// function's, and may take a while on a large payload (the sandbox's backstop allows
			// for it).
			out, drop, callErr := fn.result(v, callErr, payload, c.Info)
			mu.Lock()
			f.reply(reply{Out: out, Dropped: drop, Err: callErr})
			err := write(false)
			mu.Unlock()
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: kind %q", errCorruptFrame, kind)
		}
	}
}

// flushEvery is the longest the helper keeps a reply before it sends it, while calls come.
const flushEvery = 10 * time.Millisecond

// flushBeforeChecks is the payload size from which the replies held are sent before the checks
// of the call's output: the checks of a smaller one take at most a quarter of a second
// (checkPerByte), within what the sandbox's backstop allows beyond a call's bound.
const flushBeforeChecks = 1 << 20

// stuckReason is the reason of a call that its watchdog, or the sandbox, ended.
func stuckReason(timeout time.Duration) string {
	return fmt.Sprintf("ran longer than %v on this message and was stopped: a built-in function it called (a regular expression, JSON.stringify, join or sort of a large array, ...) did not return within %v, so its process was ended", timeout, timeout+killGrace)
}

// buildFunction compiles the source of l and builds its function.
func buildFunction(l loadRequest) (*function, error) {
	prg, err := compile(l.Name, l.Source)
	if err != nil {
		return nil, &syntaxError{err.Error()}
	}
	fn, err := newFunction(prg, l.Function, l.Timeout, l.LoadTimeout)
	if err != nil {
		return nil, err
	}
	fn.maxOutput = l.MaxOutput
	return fn, nil
}

// loaded writes the loaded frame of fn, or of err.
func loaded(f *frame, fn *function, err error) {
	f.reset(frameLoaded)
	var (
		e       *Error
		missing *MissingFunctionError
		syntax  *syntaxError
	)
	switch {
	case err == nil:
		f.byte(statusOK)
		f.strings(fn.defined)
	case errors.As(err, &e):
		f.byte(statusLoadError)
		f.error(e)
	case errors.As(err, &missing):
		f.byte(statusMissingFunc)
		f.string(missing.Function)
		f.string(missing.Found)
		f.strings(missing.Defined)
	case errors.As(err, &syntax):
		f.byte(statusSyntaxError)
		f.string(syntax.text)
	default:
		f.byte(statusOtherError)
		f.string(err.Error())
	}
}

// syntaxError is a file that does not compile, with goja's text (the position and the fault).
type syntaxError struct{ text string }

func (e *syntaxError) Error() string { return e.text }

// loaded decodes a loaded frame: the global functions, or the error.
func (d *reader) loaded() ([]string, error) {
	var err error
	var defined []string
	switch d.byte() {
	case statusOK:
		defined = d.strings()
	case statusLoadError:
		err = d.error()
	case statusMissingFunc:
		err = &MissingFunctionError{Function: d.string(), Found: d.string(), Defined: d.strings()}
	case statusSyntaxError:
		err = &syntaxError{d.string()}
	case statusOtherError:
		err = errors.New(d.string())
	default:
		d.err = errCorruptFrame
	}
	if d.err != nil {
		return nil, d.err
	}
	return defined, err
}
