// Package flowtest makes the values of package flow for tests, and runs the tests of a package
// whose pipelines run on prism (Main).
package flowtest

import "github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"

// OneEach returns one flow.Messages per message, as Dataflow's source gives them.
func OneEach(msgs []flow.Message) []flow.Messages {
	out := make([]flow.Messages, len(msgs))
	for i, m := range msgs {
		out[i] = flow.Messages{Messages: []flow.Message{m}}
	}
	return out
}
