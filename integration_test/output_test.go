package integration_test

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/ch-beam/pubsub-to-clickhouse/pipeline"
)

// TestLocalRunOutput runs the built binary on the local runner as a user does, on ClickHouse
// 18.16 and the emulator, and reads what it prints while it runs: a progress line every
// --progressSeconds, the last one with every message read, inserted or dead-lettered, and
// acknowledged; the pipeline's own start-up lines and the final metrics; none of the runner's
// INFO lines (prism's job service, the job's states, the SDK worker's). With
// --progressSeconds=0 there is no progress line. A run that ends before its first interval logs
// one line, the counts at its end: before, the last acknowledgements of a run, which it may end
// right after (a drain, the last batch's dead letters), were in no progress line.
func TestLocalRunOutput(t *testing.T) {
	e := newE2E(t, `CREATE TABLE {table} (id UInt32, n UInt8) ENGINE = MergeTree ORDER BY id`)
	e.opts.WindowSeconds = pipeline.GivenInt(1)
	e.opts.StopAfterIdle = pipeline.GivenInt(6) // room for a progress line after the last acknowledgement
	ids := e.ps.Publish(t, e.topic,
		&pubsubpb.PubsubMessage{Data: []byte(`{"id":1,"n":1}`)},
		&pubsubpb.PubsubMessage{Data: []byte(`{"id":2,"n":300}`)},
		&pubsubpb.PubsubMessage{Data: []byte(`{"id":3,"n":3}`)})
	out := e.runBinary(t, "", "--progressSeconds=1")
	e.checkAllAcked(t, ids)
	if got := e.srv.MustQuery(t, "SELECT count() FROM events"); got != "2" {
		t.Errorf("%s rows, want 2", got)
	}
	progress := regexp.MustCompile(`(?m)msg="progress: [0-9]+ messages? read, [0-9]+ rows? inserted, [0-9]+ dead letters?, [0-9]+ unacknowledged(, oldest pulled [0-9.]+m?s ago)?"$`)
	lines := progress.FindAllString(out, -1)
	if len(lines) == 0 {
		t.Errorf("no progress line:\n%s", out)
	} else if last, want := lines[len(lines)-1], `msg="progress: 3 messages read, 2 rows inserted, 1 dead letter, 0 unacknowledged"`; last != want {
		t.Errorf("the last progress line is %s, want %s\n%s", last, want, out)
	}
	for _, want := range []string{`msg="table checked"`, `msg="source: reader started"`, "metrics: ", "rows-inserted=2"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %s:\n%s", want, out)
		}
	}
	for _, runner := range []string{"Serving JobManagement", "starting Loopback server", "Prepared job with id", "Submitted job", "state: RUNNING",
		"pipeline done!", "[SDK]", "level=DEBUG"} {
		if strings.Contains(out, runner) {
			t.Errorf("the output holds the runner's line %q:\n%s", runner, out)
		}
	}

	ids = e.ps.Publish(t, e.topic, &pubsubpb.PubsubMessage{Data: []byte(`{"id":4,"n":4}`)})
	e.opts.StopAfterIdle = pipeline.GivenInt(3)
	out = e.runBinary(t, "", "--progressSeconds=0")
	e.checkAllAcked(t, ids)
	if strings.Contains(out, "progress:") {
		t.Errorf("--progressSeconds=0 logged progress:\n%s", out)
	}

	ids = e.ps.Publish(t, e.topic, &pubsubpb.PubsubMessage{Data: []byte(`{"id":5,"n":5}`)}, &pubsubpb.PubsubMessage{Data: []byte(`{"id":6,"n":600}`)})
	out = e.runBinary(t, "", "--progressSeconds=3600")
	e.checkAllAcked(t, ids)
	if lines, want := progress.FindAllString(out, -1), `msg="progress: 2 messages read, 1 row inserted, 1 dead letter, 0 unacknowledged"`; len(lines) != 1 || lines[0] != want {
		t.Errorf("the progress lines of a run shorter than --progressSeconds are %q, want %s\n%s", lines, want, out)
	}
}

// TestFailedRunGivesBackMessages: a local run that fails (every INSERT fails: the table is of the
// engine URL, whose INSERT posts its rows to an address where nothing listens, code 1000,
// "Connection refused", retried then given up; the launch's INSERT of no rows posts nothing)
// gives back the messages it had not acknowledged, so that they can be pulled at once; before, they stayed leased for the 60 s ack
// deadline the source last extended, and a restart in that time received nothing and ended idle.
// It prints the metrics it counted until it failed, as a run that ends by itself does; before, a
// failed run printed none.
func TestFailedRunGivesBackMessages(t *testing.T) {
	const n = 20
	e := newE2E(t, `CREATE TABLE {table} (id UInt32) ENGINE = URL('http://127.0.0.1:1/', TSV)`)
	e.opts.WindowSeconds = pipeline.GivenInt(1)
	e.opts.StopAfterIdle = pipeline.GivenInt(30)
	var msgs []*pubsubpb.PubsubMessage
	for i := range n {
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: fmt.Appendf(nil, `{"id":%d}`, i)})
	}
	e.ps.Publish(t, e.topic, msgs...)
	bin, _ := launchBinary(t)
	tmp := t.TempDir()
	out, err := runLaunch(t, bin, []string{"TMPDIR=" + tmp}, e.binaryArgs("", "--maxRetries=1"))
	if err == nil {
		t.Fatalf("the run succeeded, want it to fail on the table that refuses INSERTs:\n%s", out)
	}
	checkNothingLeft(t, tmp)
	for _, want := range []string{"metrics: ", fmt.Sprintf("messages-received=%d", n), fmt.Sprintf("rows-parsed-ok=%d", n)} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %s:\n%s", want, out)
		}
	}
	if want := fmt.Sprintf(`msg="gave back the messages not acknowledged: Pub/Sub redelivers them at once, to the next run" messages=%d`, n); !strings.Contains(out, want) {
		t.Errorf("the output lacks %s:\n%s", want, out)
	}
	var got []*pubsubpb.PubsubMessage
	start := time.Now()
	for time.Since(start) < 5*time.Second && len(got) < n {
		got = append(got, e.ps.PullAll(t, e.opts.InputSubscription)...)
	}
	if len(got) != n {
		t.Errorf("%d of the %d messages could be pulled within 5 s of the failed run, want all", len(got), n)
	}
}

// readOnly returns the ClickHouse URL with the setting readonly=2: queries and settings pass,
// every INSERT is refused (code 164, READONLY), so the pipeline launches and every INSERT fails
// whatever the rows, the table's engine being one that takes them.
func readOnly(t *testing.T, url string) string {
	t.Helper()
	if strings.Contains(url, "?") {
		t.Fatalf("the URL %s has options already", url)
	}
	return url + "?readonly=2"
}

// checkNothingLeft fails the test when a run of the binary left anything in dir, its TMPDIR: Beam's
// universal runner leaves an empty beamloopbackworker-* file in the temporary directory at each
// run, which the binary's own temporary directory (localrunner.TempDir) takes away with it.
func checkNothingLeft(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("the run left %s in its TMPDIR", e.Name())
	}
}
