package ack

import (
	"context"
	"errors"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/google/go-cmp/cmp"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/psclient"
)

// fakeManager records what the acknowledging stage asks of the subscription's Manager.
type fakeManager struct {
	acked  [][]string
	stored map[psclient.Outcome]int
	fail   error // the error of every Ack
}

func (m *fakeManager) Track(...string)            {}
func (m *fakeManager) TrackSized([]string, []int) {}
func (m *fakeManager) Outstanding() int           { return 0 }
func (m *fakeManager) OutstandingBytes() int64    { return 0 }
func (m *fakeManager) Stored(o psclient.Outcome, n int) {
	if m.stored == nil {
		m.stored = map[psclient.Outcome]int{}
	}
	m.stored[o] += n
}

func (m *fakeManager) Ack(_ context.Context, ids []string) error {
	m.acked = append(m.acked, ids)
	return m.fail
}

// TestAckFn checks that each stored batch is acknowledged as one call and counted under its
// outcome, that an empty batch asks nothing, and that a failed acknowledgement does not fail the
// bundle (the messages are redelivered).
func TestAckFn(t *testing.T) {
	for _, fail := range []error{nil, errors.New("rpc error: code = Unavailable")} {
		m := &fakeManager{fail: fail}
		f := &ackFn{Subscription: "projects/p/subscriptions/s", Outcome: psclient.DeadLettered, acks: m}
		for _, ids := range [][]string{{"a-1", "a-2"}, nil, {}, {"a-3"}} {
			f.ProcessElement(context.Background(), ids)
		}
		if diff := cmp.Diff([][]string{{"a-1", "a-2"}, {"a-3"}}, m.acked); diff != "" {
			t.Errorf("Ack failing with %v: acknowledged (-want +got):\n%s", fail, diff)
		}
		if diff := cmp.Diff(map[psclient.Outcome]int{psclient.DeadLettered: 3}, m.stored); diff != "" {
			t.Errorf("Ack failing with %v: counted (-want +got):\n%s", fail, diff)
		}
	}
}

// TestAcknowledgeRefuses checks that the stage refuses, when the graph is built, a configuration
// without a subscription or without an input.
func TestAcknowledgeRefuses(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	ids := beam.Create(s, []string{"a-1"}) // one element, a []string
	for name, f := range map[string]func(){
		"no subscription": func() { Acknowledge(s, Config{}, Stored{IDs: ids, Outcome: psclient.Inserted}) },
		"no input":        func() { Acknowledge(s, Config{Subscription: "projects/p/subscriptions/s"}) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
	// One acknowledging ParDo per input, so that each runs in its producer's stage.
	Acknowledge(s, Config{Subscription: "projects/p/subscriptions/s"},
		Stored{IDs: ids, Outcome: psclient.Inserted}, Stored{IDs: ids, Outcome: psclient.DeadLettered})
	edges, _, err := p.Build()
	if err != nil {
		t.Fatal(err)
	}
	var outcomes []psclient.Outcome
	for _, e := range edges {
		if e.DoFn != nil {
			if f, ok := e.DoFn.Recv.(*ackFn); ok {
				outcomes = append(outcomes, f.Outcome)
			}
		}
	}
	if diff := cmp.Diff([]psclient.Outcome{psclient.Inserted, psclient.DeadLettered}, outcomes); diff != "" {
		t.Errorf("acknowledging ParDos (-want +got):\n%s", diff)
	}
}
