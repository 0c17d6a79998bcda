package udf

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/google/go-cmp/cmp"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/gcptest"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
)

// outputs collects what ProcessElement emits.
type outputs struct {
	msgs    []flow.Message
	dead    []flow.DeadLetter
	dropped []string
}

func (o *outputs) process(t *testing.T, f *udfFn, m flow.Message) {
	t.Helper()
	ctx := metrics.SetBundleID(metrics.SetPTransformID(context.Background(), "udf"), "bundle")
	err := f.ProcessElement(ctx, flow.Messages{Messages: []flow.Message{m}},
		func(ms flow.Messages) { o.msgs = append(o.msgs, ms.Messages...) },
		func(d flow.DeadLetter) { o.dead = append(o.dead, d) },
		func(ids []string) { o.dropped = append(o.dropped, ids...) })
	if err != nil {
		t.Fatalf("ProcessElement(%s): %v", m.ID, err)
	}
}

// TestProcessElement checks the three outcomes of a message: transformed (Data the output,
// Original and the rest as they were), dropped (its ack id emitted), failed (a dead letter with
// the payload as published, the error and the JavaScript stack).
func TestProcessElement(t *testing.T) {
	path := writeUDF(t, `function transform(payload, message) {
  var e = JSON.parse(payload);
  if (e.drop) return null;
  return JSON.stringify({id: e.id, source: message.attributes.source});
}`)
	f := &udfFn{Config: Config{Path: path, Function: "transform"}}
	if err := f.Setup(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer f.Teardown()
	attrs := map[string]string{"source": "app"}
	var o outputs
	o.process(t, f, flow.Message{ID: "1", Data: []byte(`{"id":1}`), Attributes: attrs, PublishTimeMillis: 5, AckID: "ack-1"})
	o.process(t, f, flow.Message{ID: "2", Data: []byte(`{"drop":true}`), AckID: "ack-2"})
	o.process(t, f, flow.Message{ID: "3", Data: []byte(`{"drop":true}`)}) // Dataflow: no ack id
	o.process(t, f, flow.Message{ID: "4", Data: []byte(`not json`), Attributes: attrs, AckID: "ack-4"})

	want := []flow.Message{{ID: "1", Data: []byte(`{"id":1,"source":"app"}`), Attributes: attrs, PublishTimeMillis: 5, AckID: "ack-1",
		Transformed: true, Original: []byte(`{"id":1}`)}}
	if diff := cmp.Diff(want, o.msgs); diff != "" {
		t.Errorf("transformed messages (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ack-2"}, o.dropped); diff != "" {
		t.Errorf("ack ids of the dropped messages (-want +got):\n%s", diff)
	}
	if len(o.dead) != 1 {
		t.Fatalf("%d dead letters, want 1", len(o.dead))
	}
	d := o.dead[0]
	if string(d.Payload) != "not json" || d.MessageID != "4" || d.AckID != "ack-4" || d.Attributes["source"] != "app" {
		t.Errorf("dead letter %+v, want the message as published", d)
	}
	if want := "javascript UDF transform failed: threw SyntaxError: "; !strings.HasPrefix(d.ErrorMessage, want) || !strings.HasSuffix(d.ErrorMessage, "at line 2, column 21") {
		t.Errorf("error message %q, want %q... at line 2, column 21", d.ErrorMessage, want)
	}
	if !strings.HasPrefix(d.StackTrace, "stage: udf\nerror: javascript UDF transform failed") ||
		!strings.Contains(d.StackTrace, "\njavascript stack:\n  at parse (native)\n  at transform ("+path+":2:21)") {
		t.Errorf("stack trace:\n%s", d.StackTrace)
	}
}

// TestReload checks that a changed file is used after the reload interval, that a change that
// does not load keeps the current function, and that without an interval the file is read once.
func TestReload(t *testing.T) {
	const v1, v2, broken = `function f(p) { return "v1"; }`, `function f(p) { return "v2"; }`, `function f(p) { return "v3" `
	t.Run("local file", func(t *testing.T) {
		path := writeUDF(t, v1)
		checkReload(t, path, func(src string) {
			if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
		}, v2, broken)
	})
	t.Run("Cloud Storage", func(t *testing.T) {
		gcs := gcptest.StartGCS(t, "udfs")
		t.Setenv("STORAGE_EMULATOR_HOST", gcs.Host())
		gcs.Write("udfs", "f.js", []byte(v1))
		checkReload(t, "gs://udfs/f.js", func(src string) { gcs.Write("udfs", "f.js", []byte(src)) }, v2, broken)
	})
}

// checkReload runs f of path, which returns "v1", rewrites it with write to v2 (returns "v2")
// and then to broken (does not compile).
func checkReload(t *testing.T, path string, write func(string), v2, broken string) {
	const interval = 50 * time.Millisecond
	never := &udfFn{Config: Config{Path: path, Function: "f"}}
	f := &udfFn{Config: Config{Path: path, Function: "f", Reload: interval}}
	for _, fn := range []*udfFn{never, f} {
		if err := fn.Setup(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer fn.Teardown()
	}
	got := func(fn *udfFn) string {
		var o outputs
		o.process(t, fn, flow.Message{ID: "m", Data: []byte("{}")})
		if len(o.msgs) != 1 {
			t.Fatalf("%d messages out, want 1 (dead letters %+v)", len(o.msgs), o.dead)
		}
		return string(o.msgs[0].Data)
	}
	if v := got(f); v != "v1" {
		t.Fatalf("before the change: %s, want v1", v)
	}
	write(v2)
	if v := got(f); v != "v1" {
		t.Errorf("right after the change, before the interval: %s, want v1", v)
	}
	time.Sleep(interval + 10*time.Millisecond)
	// The new function is built off the messages' path: a later message takes it.
	if v := eventually(t, func() string { return got(f) }, "v2"); v != "v2" {
		t.Errorf("after the interval: %s, want v2", v)
	}
	write(broken)
	for range 5 {
		time.Sleep(interval + 10*time.Millisecond)
		if v := got(f); v != "v2" {
			t.Errorf("after a change that does not compile: %s, want v2 (the current function kept)", v)
		}
	}
	if v := got(never); v != "v1" {
		t.Errorf("without a reload interval: %s, want v1", v)
	}
}

// eventually calls get until it returns want, for up to 10 s, and returns its last value.
func eventually(t *testing.T, get func() string, want string) string {
	t.Helper()
	v := get()
	for deadline := time.Now().Add(10 * time.Second); v != want && time.Now().Before(deadline); v = get() {
		time.Sleep(20 * time.Millisecond)
	}
	return v
}

// TestReloadNeverLoads: a new version whose top-level code never ends (it runs until loadTimeout,
// 30 s, here 3 s) holds up no message: the current function goes on transforming them while the
// reload runs aside, and keeps doing so after it failed; a version after it is taken.
func TestReloadNeverLoads(t *testing.T) {
	const interval = 50 * time.Millisecond
	defer func(d time.Duration) { loadTimeout = d }(loadTimeout)
	loadTimeout = 3 * time.Second // the top-level code's bound, 30 s, shorter for the test
	path := writeUDF(t, `function f(p) { return "v1"; }`)
	f := &udfFn{Config: Config{Path: path, Function: "f", Reload: interval}}
	if err := f.Setup(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer f.Teardown()
	got := func() string {
		done := make(chan string, 1)
		go func() {
			var o outputs
			o.process(t, f, flow.Message{ID: "m", Data: []byte("{}")})
			if len(o.msgs) != 1 {
				done <- fmt.Sprintf("%d messages out", len(o.msgs))
				return
			}
			done <- string(o.msgs[0].Data)
		}()
		select {
		case v := <-done:
			return v
		case <-time.After(10 * time.Second):
			t.Fatal("a message waited 10 s: the reload of a file that never loads holds up the messages")
			return ""
		}
	}
	if err := os.WriteFile(path, []byte("while (true) {}\nfunction f(p) { return \"v2\"; }"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		time.Sleep(interval + 10*time.Millisecond)
		if v := got(); v != "v1" {
			t.Fatalf("while a version that never loads is tried: %s, want v1", v)
		}
	}
	if err := os.WriteFile(path, []byte(`function f(p) { return "v3"; }`), 0o644); err != nil {
		t.Fatal(err)
	}
	// The first reload ends within loadTimeout; the next one takes v3.
	deadline := time.Now().Add(loadTimeout + 20*time.Second)
	v := got()
	for ; v != "v3" && time.Now().Before(deadline); v = got() {
		time.Sleep(100 * time.Millisecond)
	}
	if v != "v3" {
		t.Errorf("after a version that loads: %s, want v3", v)
	}
}

// TestSetupFails checks that a worker whose file does not load fails its Setup, naming the
// parameter.
func TestSetupFails(t *testing.T) {
	f := &udfFn{Config: Config{Path: writeUDF(t, "function g(p) { return p; }"), Function: "f"}}
	err := f.Setup(context.Background())
	if err == nil || !strings.HasPrefix(err.Error(), `javascriptTextTransformFunctionName "f": `) {
		t.Errorf("Setup = %v, want an error naming javascriptTextTransformFunctionName", err)
	}
}

// TestCheckNoCredentials: a gs:// file where no credentials are to be found (no emulator, no
// Application Default Credentials) says how to get them, and that a local run may give a local
// path, rather than only the client library's "could not find default credentials".
func TestCheckNoCredentials(t *testing.T) {
	dir := t.TempDir()
	for k, v := range map[string]string{"STORAGE_EMULATOR_HOST": "", "GOOGLE_APPLICATION_CREDENTIALS": "", "HOME": dir, "CLOUDSDK_CONFIG": dir} {
		t.Setenv(k, v)
	}
	_, err := Check(context.Background(), Config{Path: "gs://my-bucket/udfs/transform.js", Function: "transform"})
	want := "javascriptTextTransformGcsPath gs://my-bucket/udfs/transform.js: no credentials for Cloud Storage: reading a gs:// file needs " +
		"Application Default Credentials (gcloud auth application-default login, or GOOGLE_APPLICATION_CREDENTIALS"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "a local run may give the file's local path instead") {
		t.Errorf("Check of a gs:// file without credentials = %v, want %q", err, want)
	}
}
