package gcptest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	df "google.golang.org/api/dataflow/v1b3"
)

// Dataflow stands in for the Dataflow v1b3 jobs API at the paths that the Go client
// (google.golang.org/api/dataflow/v1b3) uses under its BasePath:
//
//	POST v1b3/projects/{project}/locations/{location}/jobs              create: the job, with an id
//	GET  v1b3/projects/{project}/locations/{location}/jobs/{id}         the job, JOB_STATE_RUNNING
//	GET  v1b3/projects/{project}/locations/{location}/jobs/{id}/metrics no metrics
//	GET  v1b3/projects/{project}/locations/{location}/jobs              list
//
// Any other request is answered 404 with a Google API error, and recorded like the rest.
type Dataflow struct {
	srv *httptest.Server

	mu       sync.Mutex
	jobs     []*df.Job
	raw      [][]byte
	requests []Request
	seq      int
}

// Request is one request the stand-in received.
type Request struct {
	Method string
	Path   string // with the query
	// Token is the bearer token of the Authorization header ("" when there is none or it is
	// not a bearer token).
	Token  string
	Status int // the status the stand-in answered
}

// StartDataflow starts the jobs API stand-in and stops it when the test ends.
func StartDataflow(t testing.TB) *Dataflow {
	t.Helper()
	d := &Dataflow{}
	mux := http.NewServeMux()
	const jobs = "/v1b3/projects/{project}/locations/{location}/jobs"
	mux.HandleFunc("POST "+jobs, d.create)
	mux.HandleFunc("GET "+jobs+"/{id}", d.get)
	mux.HandleFunc("GET "+jobs+"/{id}/metrics", d.metrics)
	mux.HandleFunc("GET "+jobs, d.list)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("the Dataflow stand-in does not serve %s %s", r.Method, r.URL.Path))
	})
	d.srv = httptest.NewServer(d.record(mux))
	t.Cleanup(d.srv.Close)
	return d
}

// Endpoint returns the server's URL with a trailing slash: the value for --dataflow_endpoint,
// which the SDK sets as the client's BasePath (the client resolves "v1b3/..." against it, so
// without the slash a path prefix would be lost).
func (d *Dataflow) Endpoint() string { return d.srv.URL + "/" }

// Jobs returns the jobs created so far, as decoded from the requests, each with the id,
// project and location the stand-in gave it.
func (d *Dataflow) Jobs() []*df.Job {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]*df.Job(nil), d.jobs...)
}

// RawJobs returns the request bodies of the creates, in order.
func (d *Dataflow) RawJobs() [][]byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([][]byte(nil), d.raw...)
}

// Requests returns every request received so far, in order.
func (d *Dataflow) Requests() []Request {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Request(nil), d.requests...)
}

// Tokens returns the distinct bearer tokens seen, in order of first use.
func (d *Dataflow) Tokens() []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range d.Requests() {
		if r.Token != "" && !seen[r.Token] {
			seen[r.Token] = true
			out = append(out, r.Token)
		}
	}
	return out
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (d *Dataflow) record(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if token == r.Header.Get("Authorization") {
			token = ""
		}
		d.mu.Lock()
		d.requests = append(d.requests, Request{Method: r.Method, Path: r.URL.RequestURI(), Token: token, Status: sw.status})
		d.mu.Unlock()
	})
}

func (d *Dataflow) create(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	var job df.Job
	if err := json.Unmarshal(body, &job); err != nil {
		writeError(w, http.StatusBadRequest, "the job is not JSON: "+err.Error())
		return
	}
	d.mu.Lock()
	d.seq++
	// The form of Dataflow's ids: creation time and a number.
	job.Id = fmt.Sprintf("%s-%019d", time.Now().UTC().Format("2006-01-02_15_04_05"), 4242424242424242420+d.seq)
	job.ProjectId = r.PathValue("project")
	job.Location = r.PathValue("location")
	job.CurrentState = "JOB_STATE_PENDING"
	job.CreateTime = time.Now().UTC().Format(time.RFC3339Nano)
	d.jobs = append(d.jobs, &job)
	d.raw = append(d.raw, body)
	d.mu.Unlock()
	writeJSON(w, &job)
}

func (d *Dataflow) find(r *http.Request) *df.Job {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, j := range d.jobs {
		if j.Id == r.PathValue("id") && j.ProjectId == r.PathValue("project") && j.Location == r.PathValue("location") {
			c := *j
			c.CurrentState = "JOB_STATE_RUNNING"
			return &c
		}
	}
	return nil
}

func (d *Dataflow) get(w http.ResponseWriter, r *http.Request) {
	j := d.find(r)
	if j == nil {
		writeError(w, http.StatusNotFound, "no job "+r.PathValue("id"))
		return
	}
	// A view=JOB_VIEW_SUMMARY get carries no steps or environment; the SDK reads only the state.
	writeJSON(w, j)
}

func (d *Dataflow) metrics(w http.ResponseWriter, r *http.Request) {
	if d.find(r) == nil {
		writeError(w, http.StatusNotFound, "no job "+r.PathValue("id"))
		return
	}
	writeJSON(w, &df.JobMetrics{})
}

func (d *Dataflow) list(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	var out []*df.Job
	for _, j := range d.jobs {
		if j.ProjectId == r.PathValue("project") && j.Location == r.PathValue("location") {
			c := *j
			c.CurrentState = "JOB_STATE_RUNNING"
			out = append(out, &c)
		}
	}
	d.mu.Unlock()
	writeJSON(w, &df.ListJobsResponse{Jobs: out})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// writeError answers in the form of Google APIs' errors, which googleapi.CheckResponse decodes.
func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"code": code, "message": msg, "status": http.StatusText(code),
	}})
}
