// Package ack is the acknowledging stage of the local runner: it acknowledges on the input
// subscription the messages whose dead letters the dead-letter stage wrote and those the
// JavaScript UDF dropped. Those stages emit the ack ids of what they stored, one []string per
// stored batch; this stage is the edge from them back to Pub/Sub, in the graph. (The write stage
// acknowledges the messages of its rows itself, as each INSERT commits: its outputs reach this
// stage only once its whole bundle has succeeded, every INSERT of a batch, so a failure between
// two INSERTs gave back rows already committed; see write.Config.AckSubscription.) It is absent
// on Dataflow, whose Pub/Sub read the service acknowledges.
//
// An acknowledgement that fails is logged and not retried: the message is then redelivered and
// written again, which a deduplicating table absorbs (see docs/delivery.md).
package ack

import (
	"context"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/psclient"
)

func init() {
	register.DoFn2x0[context.Context, []string](&ackFn{})
}

// Config is what the acknowledging stage needs.
type Config struct {
	Subscription string // projects/<project>/subscriptions/<name>, the source's
}

// Stored is one input of Acknowledge: a PCollection<[]string> of the ack ids of one stored batch
// per element, and what became of those messages (counted for the run's progress line).
type Stored struct {
	IDs     beam.PCollection
	Outcome psclient.Outcome
}

// Acknowledge acknowledges, on cfg.Subscription, the ack ids of stored. It panics at
// construction when the subscription is empty or stored is.
func Acknowledge(s beam.Scope, cfg Config, stored ...Stored) {
	s = s.Scope("Acknowledge")
	subscription := cfg.Subscription
	if subscription == "" || len(stored) == 0 {
		panic(fmt.Sprintf("ack.Acknowledge: subscription %q and %d inputs", subscription, len(stored)))
	}
	// One acknowledging ParDo per input rather than one after a Flatten: each then runs in its
	// producer's stage. A stage of its own, with no output, costs prism (Beam 2.77.0) a core for
	// as long as each of its bundles runs: its progress loop spins on the closed channel of a
	// stage without outputs (stage.Execute) until the bundle's response; in the demo that was a
	// third of the pipeline's CPU.
	for _, in := range stored {
		beam.ParDo0(s, &ackFn{Subscription: subscription, Outcome: in.Outcome}, in.IDs)
	}
}

// ackFn acknowledges one stored batch per element.
type ackFn struct {
	Subscription string
	Outcome      psclient.Outcome // what became of the messages, for the progress line

	acks psclient.Manager
}

func (f *ackFn) Setup(ctx context.Context) error {
	var err error
	f.acks, err = psclient.ForSubscription(ctx, f.Subscription)
	return err
}

func (f *ackFn) ProcessElement(ctx context.Context, ids []string) {
	psclient.AckStored(ctx, f.acks, f.Subscription, f.Outcome, ids)
}
