// The function runs in a helper process of its own (helper.go), so that its bound holds
// whatever the script calls. goja stops JavaScript code when interrupted, but only between its
// instructions: a built-in that runs long stays deaf to it (a regular expression that
// backtracks exponentially, JSON.stringify of a value that shares its parts, join or indexOf of
// a sparse array of 2^32-1 elements, each seen to run for minutes), and an allocation too big
// for the machine ends a Go process outright. In a process of its own such a call is ended by
// killing the process, its message goes to the dead letter with the bound in its error, and a
// new process takes the messages behind it.

package udf

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// maxOutputBytes is the longest output the function may return, in bytes (UTF-8): a longer
	// one is an *Error. 16 MiB, beyond any Pub/Sub message (10 MB) and what a row may carry.
	maxOutputBytes = 16 << 20
	// helperMemoryBytes is the helper process's address-space limit (RLIMIT_AS): the Go runtime
	// and goja take about 1 GiB of it before any call, so a call has about 3 GiB. An allocation
	// beyond it ends the process, and the call's message is dead-lettered.
	helperMemoryBytes = 4 << 30
	// killGrace is how long past the timeout a call may take before its process is killed: the
	// helper's own interrupt stops JavaScript code at the timeout, with the line it was on; the
	// kill is for a built-in that does not return.
	killGrace = 250 * time.Millisecond
)

// sandbox is the function in its helper process, started again after a call kills it. It is not
// safe for concurrent use: a DoFn instance, which processes one bundle at a time, owns one.
type sandbox struct {
	load    loadRequest
	defined []string // the file's global functions, as the first process found them
	proc    *helper  // nil when none runs
	// restarts counts the processes ended for a call (a timeout, out of memory, a crash) since
	// the caller last took the count.
	restarts int
}

// openSandbox starts the helper process and builds the function in it. The errors are those of
// newFunction (a *Error, a *MissingFunctionError), a *syntaxError, or the process's failure to
// start.
func openSandbox(l loadRequest) (*sandbox, error) {
	s := &sandbox{load: l}
	p, defined, err := startHelper(l)
	if err != nil {
		return nil, err
	}
	s.proc, s.defined = p, defined
	return s, nil
}

// apply calls the function on each call of calls, in order, and gives the reply of each to
// deliver, as it comes: the replies of a large element are never all held at once (each output
// may be 16 MiB). A call that runs longer than the timeout plus killGrace, or that ends the
// process (out of memory, a crash), gets an *Error naming the cause, and a new process takes the
// calls after it. The error is for a process that cannot be started again, which is no fault of
// a message: the calls from the first without a reply get none.
//
// A process that ends without a word (out of memory, a crash, the backstop's kill) may have
// taken replies with it: when more than one call is without a reply, they are sent again one at
// a time, so that the call that ends a process is the one that fails, until one does.
func (s *sandbox) apply(calls []call, deliver func(reply)) error {
	done := 0  // calls delivered
	alone := 0 // how many of the next calls are sent one at a time
	count := func(r reply) { done++; deliver(r) }
	for done < len(calls) {
		if s.proc == nil {
			p, _, err := startHelper(s.load)
			if err != nil {
				return fmt.Errorf("javascript UDF %s: starting its process again: %w", s.load.Function, err)
			}
			s.proc = p
		}
		next := calls[done:]
		if alone > 0 {
			next = next[:1]
		}
		before := done
		failure, ended := s.proc.run(next, count)
		switch unanswered := len(next) - (done - before); {
		case failure != nil && (alone > 0 || unanswered == 1):
			// The call the process was on: alone, or the only one without a reply. The rest go
			// together again.
			failure.Function = s.load.Function
			count(reply{Err: failure})
			alone = 0
		case failure != nil:
			alone = unanswered
		case alone > 0:
			alone--
		}
		if failure != nil || ended {
			s.proc.close()
			s.proc = nil
			s.restarts++
		}
	}
	return nil
}

// Apply calls the function on one payload: apply of one call, with its error the reply's or
// apply's.
func (s *sandbox) Apply(payload string, m messageInfo) (out string, drop bool, err error) {
	var r reply
	if err := s.apply([]call{{Payload: []byte(payload), Info: m}}, func(got reply) { r = got }); err != nil {
		return "", false, err
	}
	return r.Out, r.Dropped, r.Err
}

// takeRestarts returns the count of processes ended for a call since it was last taken.
func (s *sandbox) takeRestarts() int {
	n := s.restarts
	s.restarts = 0
	return n
}

// close ends the helper process.
func (s *sandbox) close() {
	if s.proc != nil {
		s.proc.close()
		s.proc = nil
	}
}

// helper is one helper process, with its two pipes.
type helper struct {
	cmd    *exec.Cmd
	calls  *os.File // the write end of the calls' pipe (the helper's descriptor 3)
	w      *bufio.Writer
	out    *os.File // the read end of the replies' pipe (the helper's descriptor 4)
	r      *bufio.Reader
	stderr *headBuffer
	buf    []byte
	// timeout is the function's bound, for the errors: the kill comes killGrace after it.
	timeout time.Duration
	killed  atomic.Bool // the timer killed it
	timer   *time.Timer
	done    chan struct{} // closed when the process has been waited for
	exit    error         // cmd.Wait's, once done is closed
}

// startHelper starts this executable as a helper process and builds the function of l in it:
// the process, and the file's global functions.
func startHelper(l loadRequest) (*helper, []string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("finding this program to run the UDF in: %w", err)
	}
	callsR, callsW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		callsR.Close()
		callsW.Close()
		return nil, nil, err
	}
	h := &helper{calls: callsW, out: outR, stderr: &headBuffer{max: 8 << 10}, done: make(chan struct{}), timeout: l.Timeout}
	h.cmd = exec.Command(exe)
	// Nothing of the worker's environment (which may hold credentials) reaches the script's
	// process; one thread runs JavaScript, so one is what it gets.
	h.cmd.Env = []string{HelperEnv + "=" + strconv.FormatUint(helperMemoryBytes, 10), "GOMAXPROCS=1"}
	h.cmd.ExtraFiles = []*os.File{callsR, outW}
	h.cmd.Stderr = h.stderr
	h.cmd.SysProcAttr = helperAttr()
	err = h.cmd.Start()
	callsR.Close()
	outW.Close()
	if err != nil {
		callsW.Close()
		outR.Close()
		return nil, nil, fmt.Errorf("starting the UDF's process (%s): %w", exe, err)
	}
	go func() { h.exit = h.cmd.Wait(); close(h.done) }()
	h.w = bufio.NewWriterSize(callsW, 64<<10)
	h.r = bufio.NewReaderSize(outR, 64<<10)
	h.timer = time.AfterFunc(time.Hour, h.kill)
	h.timer.Stop()

	// Loading runs the file's top-level code, under loadTimeout.
	var f frame
	f.load(l)
	h.timer.Reset(l.LoadTimeout + killGrace + time.Second)
	defined, err := h.loaded(&f)
	if !h.timer.Stop() && err == nil { // the backstop killed it as the answer came
		err = errors.New("the answer came as the bound ran out")
	}
	if err != nil {
		var (
			e       *Error
			missing *MissingFunctionError
			syntax  *syntaxError
		)
		if !errors.As(err, &e) && !errors.As(err, &missing) && !errors.As(err, &syntax) {
			if failure := h.failure(err); failure != nil {
				failure.Function = l.Function
				if h.killed.Load() {
					failure.Reason = fmt.Sprintf("ran longer than %v and was stopped: a built-in function it called did not return, so its process was ended", l.LoadTimeout)
				}
				failure.Reason = "running the file's top-level code failed: " + failure.Reason
				err = failure
			}
		}
		h.close()
		return nil, nil, err
	}
	return h, defined, nil
}

// loaded sends the load frame f and reads the helper's answer.
func (h *helper) loaded(f *frame) ([]string, error) {
	if err := f.writeTo(h.w); err != nil {
		return nil, err
	}
	if err := h.w.Flush(); err != nil {
		return nil, err
	}
	var err error
	if h.buf, err = readFrame(h.r, h.buf, maxFrameBytes); err != nil {
		return nil, err
	}
	d := reader{b: h.buf}
	if d.byte() != frameLoaded {
		return nil, errCorruptFrame
	}
	return d.loaded()
}

// run sends calls to the helper and gives each reply to deliver, in order. It returns at the
// end of calls, after a reply that ends the process (ended), or with the failure of a process
// that went without a word (out of memory, a crash, or killed by the backstop: no reply for
// backstop), the replies it sent before delivered.
func (h *helper) run(calls []call, deliver func(reply)) (failure *Error, ended bool) {
	defer h.shrink()
	// The calls are written while the replies are read: the pipe holds 64 KiB.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var f frame
		for _, c := range calls {
			f.call(c)
			if f.writeTo(h.w) != nil {
				return // the process is gone; the reader says why
			}
		}
		h.w.Flush()
	}()
	defer wg.Wait()
	for i := range calls {
		h.timer.Reset(h.backstop(len(calls[i].Payload)))
		var err error
		h.buf, err = readFrame(h.r, h.buf, maxFrameBytes)
		var r reply
		if err == nil {
			d := reader{b: h.buf}
			if d.byte() != frameReply {
				err = errCorruptFrame
			} else if r = d.reply(); d.err != nil {
				err = d.err
			}
		}
		if err != nil {
			h.timer.Stop()
			return h.failure(err), false // which ends the process, and so the writer
		}
		fired := !h.timer.Stop()
		deliver(r)
		switch {
		case r.Ended:
			h.cmd.Process.Kill() // it exits by itself; the writer may be waiting on it
			return nil, true
		case fired:
			// The backstop ran out as this reply came, and killed the process: the reply stands,
			// and the calls after it go to a new process, none of them blamed.
			return nil, true
		}
	}
	return nil, false
}

// maxKeptFrame is the largest buffer of reply frames a helper keeps between elements: one grown
// for a large output (up to 16 MiB) would otherwise be held for as long as the process lives.
const maxKeptFrame = 1 << 20

// shrink drops the reply buffer when a large output grew it past maxKeptFrame; the replies
// delivered copied what they keep of it.
func (h *helper) shrink() {
	if cap(h.buf) > maxKeptFrame {
		h.buf = nil
	}
}

// backstop is how long the sandbox waits for the reply to a call of a payload of n bytes before
// it kills the process: past the helper's own watchdog (the timeout, killGrace), the helper's
// holding of replies (flushEvery) and its checks of the output after the call, which take time
// in proportion to the payload (checkPerByte), for a helper too starved to answer (its collector
// thrashing near the memory limit).
func (h *helper) backstop(n int) time.Duration {
	return h.timeout + killGrace + flushEvery + time.Second + time.Duration(n)*checkPerByte
}

// checkPerByte is the time the backstop allows for the helper's checks of an output (function.result),
// per byte of the call's payload: several times what they take on a payload of long numbers
// (about 70 ns a byte), so 2.5 s for a payload of 10 MB.
const checkPerByte = 250 * time.Nanosecond

// kill ends the process at once; the timer's function.
func (h *helper) kill() {
	h.killed.Store(true)
	h.cmd.Process.Kill()
}

// failure ends the process and says why it stopped answering, err being what reading its reply
// gave.
func (h *helper) failure(err error) *Error {
	h.cmd.Process.Kill()
	<-h.done
	timeout := h.timeout
	switch stderr := h.stderr.String(); {
	case h.killed.Load():
		return &Error{Reason: stuckReason(timeout)}
	case bytes.Contains([]byte(stderr), []byte("out of memory")):
		return &Error{Reason: fmt.Sprintf("ran out of memory on this message (the UDF's process may use %d GiB of address space) and was stopped", helperMemoryBytes>>30)}
	default:
		return &Error{Reason: fmt.Sprintf("its process ended on this message (%v; %v): %s", h.exit, err, firstLine(stderr))}
	}
}

// close ends the process: its input's end makes it exit; one that does not within a second is
// killed.
func (h *helper) close() {
	h.timer.Stop()
	h.calls.Close()
	select {
	case <-h.done:
	case <-time.After(time.Second):
		h.cmd.Process.Kill()
		<-h.done
	}
	h.out.Close()
}

// headBuffer keeps the first max bytes written to it (where the Go runtime writes its fatal
// error) and drops the rest.
type headBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (b *headBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - len(b.b); room > 0 {
		b.b = append(b.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (b *headBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.b)
}

// firstLine returns the first non-empty line of s, or "no message" when there is none.
func firstLine(s string) string {
	for _, line := range bytes.Split([]byte(s), []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 {
			return string(t)
		}
	}
	return "no message"
}
