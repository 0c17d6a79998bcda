// The frames between the stage and its helper process (sandbox.go, helper.go): each frame is its
// length as an unsigned LEB128 varint (encoding/binary's Uvarint), then a kind byte and the
// fields, strings as a varint length and the bytes:
//
//	load    'L' name, source, function, timeout and load timeout (nanoseconds), maxOutput (bytes)
//	loaded  'l' status: 0 loaded, with the global functions (count, names);
//	            1 an *Error (function, reason, line, column, stack);
//	            2 a *MissingFunctionError (function, found, count, names); 3 any other error,
//	            4 a file that does not compile (text)
//	call    'C' payload, message id, publish time (Unix milliseconds, zig-zag varint),
//	            attributes (count, then key, value for each)
//	reply   'r' status: 0 a string (the output), 1 dropped, 2 an *Error (as in loaded), 3 an *Error
//	            after which the helper exits (its watchdog ended a call that did not return)

package udf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// Frame kinds and statuses.
const (
	frameLoad   = 'L'
	frameLoaded = 'l'
	frameCall   = 'C'
	frameReply  = 'r'

	statusOK      = 0 // loaded; a reply's output string
	statusDropped = 1 // a reply: the function dropped the message
	statusError   = 2 // a reply: an *Error
	statusEnded   = 3 // a reply: an *Error, and the helper exits
	// statuses of a loaded frame
	statusLoadError   = 1
	statusMissingFunc = 2
	statusOtherError  = 3
	statusSyntaxError = 4
)

// maxFrameBytes bounds a frame read from the helper, so that a broken one cannot make the stage
// allocate without end: an output of maxOutputBytes and room for the rest.
const maxFrameBytes = maxOutputBytes + 1<<20

// frame builds one frame's body.
type frame struct{ b []byte }

func (f *frame) reset(kind byte)  { f.b = append(f.b[:0], kind) }
func (f *frame) byte(v byte)      { f.b = append(f.b, v) }
func (f *frame) uvarint(v uint64) { f.b = binary.AppendUvarint(f.b, v) }
func (f *frame) varint(v int64)   { f.b = binary.AppendVarint(f.b, v) }
func (f *frame) string(s string)  { f.uvarint(uint64(len(s))); f.b = append(f.b, s...) }
func (f *frame) bytes(p []byte)   { f.uvarint(uint64(len(p))); f.b = append(f.b, p...) }
func (f *frame) strings(ss []string) {
	f.uvarint(uint64(len(ss)))
	for _, s := range ss {
		f.string(s)
	}
}
func (f *frame) writeTo(w *bufio.Writer) error {
	var n [binary.MaxVarintLen64]byte
	if _, err := w.Write(n[:binary.PutUvarint(n[:], uint64(len(f.b)))]); err != nil {
		return err
	}
	_, err := w.Write(f.b)
	return err
}

// error appends the fields of e.
func (f *frame) error(e *Error) {
	f.string(e.Function)
	f.string(e.Reason)
	f.uvarint(uint64(e.Line))
	f.uvarint(uint64(e.Column))
	f.string(e.Stack)
}

// errCorruptFrame is a frame that does not decode: the helper is broken.
var errCorruptFrame = errors.New("corrupt frame from the UDF's process")

// reader decodes one frame's body.
type reader struct {
	b   []byte
	err error
}

// readFrame reads the next frame of r, of at most limit bytes, into buf (grown as needed).
func readFrame(r *bufio.Reader, buf []byte, limit int) ([]byte, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return buf, err
	}
	if n > uint64(limit) {
		return buf, fmt.Errorf("%w: %d bytes, more than %d", errCorruptFrame, n, limit)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return buf, err
	}
	return buf, nil
}

func (d *reader) byte() byte {
	if d.err != nil || len(d.b) == 0 {
		d.err = errCorruptFrame
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *reader) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errCorruptFrame
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *reader) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errCorruptFrame
		return 0
	}
	d.b = d.b[n:]
	return v
}

// bytes returns the next field, sharing the frame's buffer.
func (d *reader) bytes() []byte {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b)) {
		d.err = errCorruptFrame
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *reader) string() string { return string(d.bytes()) }

func (d *reader) strings() []string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.err = errCorruptFrame
		return nil
	}
	var out []string
	for ; n > 0 && d.err == nil; n-- {
		out = append(out, d.string())
	}
	return out
}

func (d *reader) error() *Error {
	return &Error{Function: d.string(), Reason: d.string(), Line: int(d.uvarint()), Column: int(d.uvarint()), Stack: d.string()}
}

// loadRequest is what the helper needs to build the function: the file's name (for positions
// and stacks) and source, the function's name, the bound of a call and of its output.
type loadRequest struct {
	Name        string
	Source      []byte
	Function    string
	Timeout     time.Duration
	LoadTimeout time.Duration // of the top-level code
	MaxOutput   int
}

func (f *frame) load(l loadRequest) {
	f.reset(frameLoad)
	f.string(l.Name)
	f.bytes(l.Source)
	f.string(l.Function)
	f.uvarint(uint64(l.Timeout))
	f.uvarint(uint64(l.LoadTimeout))
	f.uvarint(uint64(l.MaxOutput))
}

func (d *reader) load() loadRequest {
	return loadRequest{Name: d.string(), Source: d.bytes(), Function: d.string(), Timeout: time.Duration(d.uvarint()), LoadTimeout: time.Duration(d.uvarint()), MaxOutput: int(d.uvarint())}
}

// call is one message for the function: its payload, id, publish time and attributes.
type call struct {
	Payload []byte
	Info    messageInfo
}

func (f *frame) call(c call) {
	f.reset(frameCall)
	f.bytes(c.Payload)
	f.string(c.Info.ID)
	var ms int64
	if !c.Info.PublishTime.IsZero() {
		ms = c.Info.PublishTime.UnixMilli()
	}
	f.varint(ms)
	f.uvarint(uint64(len(c.Info.Attributes)))
	for k, v := range c.Info.Attributes {
		f.string(k)
		f.string(v)
	}
}

func (d *reader) call() call {
	c := call{Payload: d.bytes(), Info: messageInfo{ID: d.string()}}
	if ms := d.varint(); ms != 0 {
		c.Info.PublishTime = time.UnixMilli(ms)
	}
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.err = errCorruptFrame
		return c
	}
	c.Info.Attributes = make(map[string]string, n)
	for ; n > 0 && d.err == nil; n-- {
		k := d.string()
		c.Info.Attributes[k] = d.string()
	}
	return c
}

// reply is what the function made of one call: its output, or dropped, or its error.
type reply struct {
	Out     string
	Dropped bool
	Err     error // an *Error
	// Ended says that the helper exits after this reply: its watchdog stopped the call.
	Ended bool
}

func (f *frame) reply(r reply) {
	f.reset(frameReply)
	var e *Error
	switch {
	case r.Err != nil:
		if !errors.As(r.Err, &e) {
			e = &Error{Reason: r.Err.Error()}
		}
		if r.Ended {
			f.byte(statusEnded)
		} else {
			f.byte(statusError)
		}
		f.error(e)
	case r.Dropped:
		f.byte(statusDropped)
	default:
		f.byte(statusOK)
		f.string(r.Out)
	}
}

func (d *reader) reply() reply {
	switch d.byte() {
	case statusOK:
		return reply{Out: d.string()}
	case statusDropped:
		return reply{Dropped: true}
	case statusError:
		return reply{Err: d.error()}
	case statusEnded:
		return reply{Err: d.error(), Ended: true}
	}
	d.err = errCorruptFrame
	return reply{}
}
