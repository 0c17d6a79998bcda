package integration_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/pubsubtest"
	"github.com/ch-beam/pubsub-to-clickhouse/pipeline"
)

// TestOrderedInputSubscription runs the binary on the local runner from a subscription with
// message ordering, on which the emulator delivers no later message of an ordering key while an
// earlier one is unacknowledged (Pub/Sub holds later ones back too), and the local source
// acknowledges a message only once its row is inserted. With batchRowCount alone, a batch waits
// for messages Pub/Sub holds back until it is inserted: the run takes a message or so of each key
// and then stops as idle (without stopAfterIdle it would wait without end); the launch warns of
// it, which it did not before. With windowSeconds as well the launch warns that a key drains a
// delivery per window, and every message is a row with its ordering key; with windowSeconds
// alone, that a key drains a delivery per window and a second more, as it does.
func TestOrderedInputSubscription(t *testing.T) {
	bin, _ := launchBinary(t)
	e := newE2EApart(t, "CREATE TABLE {table} (k UInt32, ok String) ENGINE = MergeTree ORDER BY k")
	sub := "projects/" + pubsubtest.Project + "/subscriptions/ordered"
	if _, err := e.ps.Client.SubscriptionAdminClient.CreateSubscription(context.Background(), &pubsubpb.Subscription{
		Name: sub, Topic: e.topic, AckDeadlineSeconds: 10, EnableMessageOrdering: true}); err != nil {
		t.Fatal(err)
	}
	e.opts.InputSubscription = sub
	var msgs []*pubsubpb.PubsubMessage
	for i := range 20 {
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: fmt.Appendf(nil, `{"k":%d}`, i), OrderingKey: fmt.Sprint("key", i%2)})
	}
	ids := e.ps.Publish(t, e.topic, msgs...)
	env := []string{"PUBSUB_EMULATOR_HOST=" + e.ps.Addr}

	e.opts.BatchRowCount = pipeline.GivenInt(5)
	out, err := runLaunch(t, bin, env, e.binaryArgs("", "--metadataColumns=ordering_key=ok"))
	if err != nil || !strings.Contains(out, "inputSubscription has message ordering enabled: Pub/Sub holds back later messages of an ordering key") ||
		!strings.Contains(out, "with batchRowCount (5) alone a batch fed by fewer ordering keys than it needs waits without end") {
		t.Errorf("the count mode on an ordered subscription: %v, want a warning of the stall; output:\n%s", err, out)
	}
	if got := e.srv.MustQuery(t, "SELECT count() FROM events"); got == "20" {
		t.Errorf("the count mode stored every row: the emulator no longer holds back later messages of a key, and the test shows nothing")
	}

	e.opts.WindowSeconds = pipeline.GivenInt(1)
	start := time.Now()
	out, err = runLaunch(t, bin, env, e.binaryArgs("", "--metadataColumns=ordering_key=ok"))
	if err != nil {
		t.Fatalf("the combined mode: %v\n%s", err, out)
	}
	t.Logf("the combined mode ran %v", time.Since(start).Round(time.Second))
	if !strings.Contains(out, "inputSubscription has message ordering enabled") || !strings.Contains(out, "about one delivery every 1s") {
		t.Errorf("the combined mode on an ordered subscription does not warn:\n%s", out)
	}
	want := "20\t20\t20"
	if got := e.srv.MustQuery(t, "SELECT count(), uniqExact(k), countIf(ok = concat('key', toString(k % 2))) FROM events"); got != want {
		t.Errorf("rows: count, distinct k, with their ordering key: %s, want %s", got, want)
	}
	e.checkAllAcked(t, ids)

	// windowSeconds alone: a window closes once the watermark, which trails the clock by a
	// second, passes its end, so a key drains a delivery per window and a second more (the
	// warning said a delivery per window).
	const n = 6
	msgs = msgs[:0]
	for i := range n {
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: fmt.Appendf(nil, `{"k":%d}`, 100+i), OrderingKey: "key9"})
	}
	ids = e.ps.Publish(t, e.topic, msgs...)
	e.opts.BatchRowCount = pipeline.OptionalInt{}
	start = time.Now()
	out, err = runLaunch(t, bin, env, e.binaryArgs("", "--metadataColumns=ordering_key=ok"))
	if err != nil {
		t.Fatalf("the fixed-window mode: %v\n%s", err, out)
	}
	ran := time.Since(start)
	t.Logf("the fixed-window mode ran %v for %d deliveries of one key", ran.Round(time.Second), n)
	if !strings.Contains(out, "about one delivery every 1s and a second more") {
		t.Errorf("the fixed-window mode on an ordered subscription does not warn of its pace:\n%s", out)
	}
	if ran < (n-1)*1500*time.Millisecond {
		t.Errorf("%d deliveries of one key took %v, less than (n-1) windows and a second more each: the warning overstates the wait", n, ran)
	}
	if got := e.srv.MustQuery(t, "SELECT count(), countIf(ok = 'key9') FROM events WHERE k >= 100"); got != fmt.Sprintf("%d\t%d", n, n) {
		t.Errorf("rows of key9: count, with the key: %s, want %d of each", got, n)
	}
	e.checkAllAcked(t, ids)
}
