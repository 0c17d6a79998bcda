package source

import (
	"testing"
	"time"
)

// TestDrainGatesPulls: after Drain no Pull begins, and PullsDone waits for the one under way
// (its messages not yet tracked), up to its limit.
func TestDrainGatesPulls(t *testing.T) {
	t.Cleanup(func() {
		gate.Lock()
		gate.draining, gate.pulling = false, 0
		gate.Unlock()
	})
	if !beginPull() {
		t.Fatal("a Pull could not begin before a drain")
	}
	Drain()
	if !isDraining() || beginPull() {
		t.Fatal("a Pull could begin after Drain")
	}
	start := time.Now()
	if PullsDone(50 * time.Millisecond) {
		t.Fatal("PullsDone with a Pull under way")
	}
	if waited := time.Since(start); waited < 50*time.Millisecond {
		t.Errorf("PullsDone gave up after %v, before its limit", waited)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		endPull()
	}()
	if !PullsDone(5 * time.Second) {
		t.Fatal("PullsDone after the Pull ended")
	}
}
