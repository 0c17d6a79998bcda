package psclient

// Acknowledgement of the messages the local source (package source) pulls: a Manager keeps their
// ack deadlines extended from the pull until they are acknowledged: by the write stage as each
// INSERT of their rows commits, or by the acknowledging stage (package ack) once their dead
// letters are written.
//
// Why: on prism (the local runner) buffered rows live only in memory, so a message acknowledged
// on receipt, or at bundle finalization, would be lost with the rows still waiting in a window if
// the process died. The ack id therefore travels with the row and the dead letter; the write
// stage acknowledges its rows' messages as each INSERT commits, and the dead-letter stage emits
// the ack ids of what it stored for the acknowledging stage: an edge of the graph. On Dataflow the source is pubsubio.Read, the service acknowledges
// at its own checkpoints, the ack ids are empty and the acknowledging stage is not in the graph.
//
// One Manager per subscription per process (ForSubscription): prism runs the Go SDK worker in
// the launching process (loopback), so the source, which tracks what it pulled, and the
// acknowledging stage share it.

import (
	"context"
	"log/slog"
)

// Manager tracks the messages pulled from one subscription until they are acknowledged.
type Manager interface {
	// Track registers ack ids that were just pulled: their ack deadline is extended until Ack.
	Track(ackIDs ...string)
	// TrackSized is Track with each message's size in bytes (sizes[i] is ackIDs[i]'s), which
	// OutstandingBytes adds up.
	TrackSized(ackIDs []string, sizes []int)
	// Ack acknowledges the messages and stops tracking them. Empty ids are ignored. An error means
	// the acknowledgement may not have reached Pub/Sub; the message will then be redelivered.
	Ack(ctx context.Context, ackIDs []string) error
	// Outstanding returns the number of tracked messages not yet acknowledged.
	Outstanding() int
	// OutstandingBytes returns the size of the tracked messages not yet acknowledged, in bytes as
	// TrackSized was given them (0 for those Track registered).
	OutstandingBytes() int64
	// Stored counts n messages stored (or dropped) with outcome o, for the progress of a run.
	Stored(o Outcome, n int)
}

// ForSubscription returns the process's Manager of subscription
// (projects/<project>/subscriptions/<name>), creating it and its Pub/Sub client on first use. The
// client honours PUBSUB_EMULATOR_HOST.
func ForSubscription(ctx context.Context, subscription string) (Manager, error) {
	return forSubscription(ctx, subscription)
}

// AckStored counts ids as messages stored with outcome o (Stored, for the progress of a run) and
// acknowledges them on m, the Manager of subscription. A failed acknowledgement is logged, not
// returned: what was stored is stored, and Pub/Sub delivers the messages again. The write stage
// (each INSERT's rows) and the acknowledging stage (dead letters, drops) acknowledge through it.
func AckStored(ctx context.Context, m Manager, subscription string, o Outcome, ids []string) {
	if len(ids) == 0 {
		return
	}
	m.Stored(o, len(ids))
	if err := m.Ack(ctx, ids); err != nil {
		slog.Warn("acknowledging stored messages failed; Pub/Sub will redeliver them", "subscription", subscription, "messages", len(ids), "error", err)
	}
}
