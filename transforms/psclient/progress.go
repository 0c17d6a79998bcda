package psclient

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"
)

// Outcome is what became of the messages whose ack ids the acknowledging stage acknowledges.
type Outcome int

const (
	Inserted     Outcome = iota // their rows were inserted
	DeadLettered                // their dead letters were written
	Dropped                     // the JavaScript UDF dropped them
)

// outcomes counts the messages of each Outcome; an Acker holds one.
type outcomes [3]atomic.Int64

// Stored counts n messages acknowledged with outcome o, for Progress.
func (a *Acker) Stored(o Outcome, n int) {
	if o >= 0 && int(o) < len(a.outcomes) {
		a.outcomes[o].Add(int64(n))
	}
}

// Progress is how far a local run has come: what its source pulled and what became of it.
type Progress struct {
	Read         int64         // messages pulled (a redelivered message counts again)
	Inserted     int64         // messages whose rows were inserted
	DeadLettered int64         // messages whose dead letters were written
	Dropped      int64         // messages the JavaScript UDF dropped
	Unacked      int           // messages pulled and not yet acknowledged
	Oldest       time.Duration // how long ago the oldest of them was pulled; 0 when none
}

// Progress returns the Acker's progress as of now.
func (a *Acker) Progress() Progress {
	p := Progress{
		Read:         a.tracks.Load(),
		Inserted:     a.outcomes[Inserted].Load(),
		DeadLettered: a.outcomes[DeadLettered].Load(),
		Dropped:      a.outcomes[Dropped].Load(),
	}
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	p.Unacked = len(a.tracked)
	at := mono(now)
	for _, e := range a.tracked {
		p.Oldest = max(p.Oldest, time.Duration(at-e.pulled))
	}
	return p
}

// String is the progress as one line: "1200 messages read, 1176 rows inserted, 24 dead letters,
// 0 unacknowledged", with ", oldest pulled 3.2s ago" while some are unacknowledged and the
// messages the UDF dropped when there are any.
func (p Progress) String() string {
	plural := func(n int64, one, many string) string {
		if n == 1 {
			return "1 " + one
		}
		return fmt.Sprintf("%d %s", n, many)
	}
	parts := []string{
		plural(p.Read, "message read", "messages read"),
		plural(p.Inserted, "row inserted", "rows inserted"),
		plural(p.DeadLettered, "dead letter", "dead letters"),
	}
	if p.Dropped > 0 {
		parts = append(parts, plural(p.Dropped, "message dropped by the JavaScript UDF", "messages dropped by the JavaScript UDF"))
	}
	unacked := fmt.Sprintf("%d unacknowledged", p.Unacked)
	if p.Unacked > 0 {
		unacked += fmt.Sprintf(", oldest pulled %s ago", p.Oldest.Round(100*time.Millisecond))
	}
	return strings.Join(append(parts, unacked), ", ")
}

// Rate is n messages over d in messages per second, cut to a tenth (1234.5); 0 when d is not
// positive.
func Rate(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(int64(float64(n)/d.Seconds()*10)) / 10
}
