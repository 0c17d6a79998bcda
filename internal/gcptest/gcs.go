// Package gcptest gives tests local stand-ins of the Google APIs that a Dataflow launch talks to:
// Cloud Storage (where the Go runner stages the worker binary, the model and a template's job,
// and where certificates may be kept), the Dataflow v1b3 jobs API (where a direct launch submits
// its job), Secret Manager (where the ClickHouse password and keys may be kept), and a
// service-account key whose token endpoint is local (what the Dataflow client authenticates
// with). Everything listens on loopback; nothing reaches Google.
//
// A launched binary finds them through its environment and flags:
//
//	STORAGE_EMULATOR_HOST=<GCS.Host()>                   (cloud.google.com/go/storage, no credentials)
//	SECRET_MANAGER_EMULATOR_HOST=<SecretManager.Host()>  (cloud.google.com/go/secretmanager, no credentials)
//	GOOGLE_APPLICATION_CREDENTIALS=<ServiceAccount(t, dir)>
//	--dataflow_endpoint=<Dataflow.Endpoint()>
package gcptest

import (
	"bytes"
	"io"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"
)

// GCS is an in-memory Cloud Storage server (fake-gcs-server) on loopback, plain HTTP.
type GCS struct {
	Server *fakestorage.Server
}

// StartGCS starts a Cloud Storage stand-in with the given buckets and stops it when the test
// ends. Point a process at it with STORAGE_EMULATOR_HOST=Host(): the storage client then talks
// plain HTTP to http://<host>/storage/v1/ (and /upload/storage/v1/ for uploads) without
// credentials.
func StartGCS(t testing.TB, buckets ...string) *GCS {
	t.Helper()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		Scheme: "http",
		Host:   "127.0.0.1",
		// Port 0: httptest's listener on a free loopback port. The server's URL is then also
		// where resumable uploads are told to continue (the Location header).
		Port: 0,
	})
	if err != nil {
		t.Fatalf("starting the Cloud Storage stand-in: %v", err)
	}
	t.Cleanup(srv.Stop)
	for _, b := range buckets {
		srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: b})
	}
	return &GCS{Server: srv}
}

// URL returns the server's base URL, http://127.0.0.1:<port>.
func (g *GCS) URL() string { return g.Server.URL() }

// Host returns host:port, the value for STORAGE_EMULATOR_HOST.
func (g *GCS) Host() string {
	u, err := url.Parse(g.Server.URL())
	if err != nil {
		return strings.TrimPrefix(g.Server.URL(), "http://")
	}
	return u.Host
}

// Env returns the environment entry that points a process at this server.
func (g *GCS) Env() string { return "STORAGE_EMULATOR_HOST=" + g.Host() }

// Objects returns the names of the objects of bucket whose names start with prefix, sorted.
func (g *GCS) Objects(t testing.TB, bucket, prefix string) []string {
	t.Helper()
	attrs, _, err := g.Server.ListObjectsWithOptions(bucket, fakestorage.ListOptions{Prefix: prefix})
	if err != nil {
		t.Fatalf("listing gs://%s/%s: %v", bucket, prefix, err)
	}
	names := make([]string, 0, len(attrs))
	for _, a := range attrs {
		names = append(names, a.Name)
	}
	sort.Strings(names)
	return names
}

// Read returns the bytes of an object, failing the test when it does not exist.
func (g *GCS) Read(t testing.TB, bucket, name string) []byte {
	t.Helper()
	b, ok := g.Lookup(bucket, name)
	if !ok {
		t.Fatalf("gs://%s/%s does not exist; the bucket holds %q", bucket, name, g.Objects(t, bucket, ""))
	}
	return b
}

// Put writes an object.
func (g *GCS) Put(bucket, name string, data []byte) {
	g.Server.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: bucket, Name: name}, Content: data})
}

// Lookup returns the bytes of an object and whether it exists.
func (g *GCS) Lookup(bucket, name string) ([]byte, bool) {
	obj, err := g.Server.GetObjectStreaming(bucket, name)
	if err != nil {
		return nil, false
	}
	defer obj.Close()
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, obj.Content); err != nil {
		return nil, false
	}
	return buf.Bytes(), true
}

// Write creates or replaces the object gs://bucket/name with data.
func (g *GCS) Write(bucket, name string, data []byte) {
	g.Server.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: bucket, Name: name}, Content: data})
}

// ReadURL reads gs://bucket/object.
func (g *GCS) ReadURL(t testing.TB, gsURL string) []byte {
	t.Helper()
	bucket, name, ok := SplitURL(gsURL)
	if !ok {
		t.Fatalf("%q is not a gs://bucket/object URL", gsURL)
	}
	return g.Read(t, bucket, name)
}

// SplitURL splits gs://bucket/object into its bucket and object name.
func SplitURL(gsURL string) (bucket, name string, ok bool) {
	rest, ok := strings.CutPrefix(gsURL, "gs://")
	if !ok {
		return "", "", false
	}
	bucket, name, ok = strings.Cut(rest, "/")
	return bucket, name, ok && bucket != "" && name != ""
}
