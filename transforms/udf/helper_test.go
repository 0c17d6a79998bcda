package udf

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// TestRepliesBeforeLongChecks: a reply the helper holds for a run of replies (flushEvery) is
// sent before the checks of a large payload's output, which run outside the call's bound. The
// sandbox waits for each reply with a backstop of its own call's size: a small call's reply held
// behind a large call's invoke and checks (seconds for 10 MB) got the process killed, and the
// calls resent one at a time, though none was stuck.
func TestRepliesBeforeLongChecks(t *testing.T) {
	var big strings.Builder
	big.WriteString(`{"a":9007199254740993,"v":[1`)
	for i := 0; big.Len() < 4<<20; i++ {
		fmt.Fprintf(&big, ",%d.5e3", 1234567890123456+i) // each an integer, checked as a fraction
	}
	big.WriteString(`]}`)
	start := time.Now()
	if r := roundingOf(big.String()); r != nil {
		r.check(big.String(), big.String())
	}
	checks := time.Since(start)

	var in bytes.Buffer
	w := bufio.NewWriter(&in)
	var f frame
	f.load(loadRequest{Name: "f.js", Source: []byte(`function f(p) { return p; }`), Function: "f", Timeout: 10 * time.Second, LoadTimeout: 10 * time.Second})
	f.writeTo(w)
	for _, p := range []string{`{"small":1}`, big.String()} {
		f.call(call{Payload: []byte(p), Info: messageInfo{ID: "1"}})
		f.writeTo(w)
	}
	w.Flush()

	pr, pw := io.Pipe()
	served := make(chan error, 1)
	go func() {
		out := bufio.NewWriterSize(pw, 64<<10)
		served <- serve(bufio.NewReaderSize(&in, 64<<10), out)
		pw.Close()
	}()
	r := bufio.NewReader(pr)
	var at []time.Time
	var buf []byte
	for {
		var err error
		if buf, err = readFrame(r, buf, maxFrameBytes); err != nil {
			break
		}
		at = append(at, time.Now())
	}
	if err := <-served; err != io.EOF {
		t.Fatalf("serve: %v", err)
	}
	if len(at) != 3 {
		t.Fatalf("%d frames; want the load's and two replies", len(at))
	}
	gap := at[2].Sub(at[1])
	t.Logf("checks of the large payload %v; the small call's reply came %v before the large one's", checks.Round(time.Millisecond), gap.Round(time.Millisecond))
	if gap < checks/3 {
		t.Errorf("the small call's reply came %v before the large one's, whose checks take %v: it was held behind them", gap, checks)
	}
}
