package source

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
)

// Restriction is the reader's restriction: the unbounded sequence of messages of a subscription,
// one position per message, from position Next on. Besides the position it carries what the
// reader must remember from one ProcessElement call to the next (the runner resumes the
// restriction after every pull, possibly on a new DoFn instance): when it started and when a
// message last arrived and when a Pull response was last lost, for the idle stop.
type Restriction struct {
	Next        int64 // position of the next message: the number of messages read before it
	StartMillis int64 // when the reader first ran, Unix ms; 0 until then
	LastMillis  int64 // when a message last arrived (or the reader started), Unix ms
	// LostMillis is when a Pull response was last lost (too large for the client), Unix ms; 0
	// if none was. Its messages come back after the subscription's ack deadline.
	LostMillis int64
	Done       bool // the reader has stopped, or the restriction was checkpointed
}

// endPosition, claimed, ends the restriction: the reader stops.
const endPosition = math.MaxInt64

func encodeRestriction(r Restriction) ([]byte, error) {
	var buf bytes.Buffer
	if err := binary.Write(&buf, binary.BigEndian, r); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func decodeRestriction(b []byte) (Restriction, error) {
	var r Restriction
	err := binary.Read(bytes.NewReader(b), binary.BigEndian, &r)
	return r, err
}

// tracker tracks a Restriction. It never splits for a fraction above 0 (one reader per
// subscription, no parallel split), and it splits at 0 (the self-checkpoint after each pull) only
// when ProcessElement is not between a pull and the emission of its messages, so that a claim
// never fails for messages already pulled. Its methods are called under the LockRTracker's lock.
type tracker struct {
	rest    Restriction
	claimed int64 // positions claimed through this tracker
	busy    bool  // between a pull and the end of its emission: no split
	err     error
}

var _ sdf.BoundableRTracker = (*tracker)(nil)

func newTracker(r Restriction) *tracker { return &tracker{rest: r} }

// TryClaim claims the position pos (int64), which must be the restriction's next one, or
// endPosition, which marks the restriction done and returns false.
func (t *tracker) TryClaim(pos any) bool {
	p, ok := pos.(int64)
	if !ok {
		t.err = fmt.Errorf("source: claimed position %v of type %T, want int64", pos, pos)
		return false
	}
	if t.rest.Done {
		return false
	}
	if p == endPosition {
		t.rest.Done = true
		return false
	}
	if p != t.rest.Next {
		t.err = fmt.Errorf("source: claimed position %d, want the next position %d", p, t.rest.Next)
		return false
	}
	t.rest.Next++
	t.claimed++
	return true
}

func (t *tracker) GetError() error { return t.err }

// TrySplit splits only at fraction 0 and only outside of an emission: the primary is done, the
// residual is the rest of the stream with the reader's memory.
func (t *tracker) TrySplit(fraction float64) (primary, residual any, err error) {
	if t.rest.Done || t.busy || fraction > 0 || t.err != nil {
		return t.rest, nil, nil
	}
	res := t.rest
	t.rest.Done = true
	return t.rest, res, nil
}

// GetProgress reports the messages claimed, and one unit remaining while the stream goes on.
func (t *tracker) GetProgress() (done, remaining float64) {
	if t.rest.Done {
		return float64(t.claimed), 0
	}
	return float64(t.claimed), 1
}

func (t *tracker) IsDone() bool        { return t.err == nil && t.rest.Done }
func (t *tracker) GetRestriction() any { return t.rest }
func (t *tracker) IsBounded() bool     { return false }

// withTracker runs f on the tracker under the LockRTracker's lock.
func withTracker(rt *sdf.LockRTracker, f func(t *tracker)) error {
	rt.Mu.Lock()
	defer rt.Mu.Unlock()
	t, ok := rt.Rt.(*tracker)
	if !ok {
		return errors.New("source: unexpected restriction tracker")
	}
	f(t)
	return nil
}

// watermarkEstimator is a manual watermark estimator: ProcessElement advances it, never
// backwards. Its state is the watermark in Unix ms.
type watermarkEstimator struct {
	state int64
}

func (e *watermarkEstimator) CurrentWatermark() time.Time { return time.UnixMilli(e.state) }

func (e *watermarkEstimator) advance(t time.Time) {
	if ms := t.UnixMilli(); ms > e.state {
		e.state = ms
	}
}
