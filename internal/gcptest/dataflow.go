package gcptest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
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
// As the service does, a create of a job whose name is that of an active job is refused (409
// ALREADY_EXISTS) unless the job names that job in replaceJobId; a replaced job is then
// JOB_STATE_UPDATED, no longer active. Any other request is answered 404 with a Google API
// error, and recorded like the rest.
type Dataflow struct {
	srv *httptest.Server

	mu       sync.Mutex
	jobs     []*df.Job
	raw      [][]byte
	running  []*df.Job // jobs that AddRunning made
	later    []*df.Job // jobs that AddRunningAfterList made, running after the next list
	replaced map[string]bool
	denyList bool
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

// AddRunning adds a running job named name in projects/project/locations/location, as if it had
// been launched earlier, and returns its id. Jobs does not return it.
func (d *Dataflow) AddRunning(project, location, name string) string {
	return d.addRunning(&d.running, project, location, name)
}

// AddRunningAfterList is AddRunning once the stand-in has answered the next list of jobs, as if
// another launch had submitted the job just after it, and returns the job's id.
func (d *Dataflow) AddRunningAfterList(project, location, name string) string {
	return d.addRunning(&d.later, project, location, name)
}

// addRunning appends a streaming job named name to *jobs, a list of d's, and returns its id.
func (d *Dataflow) addRunning(jobs *[]*df.Job, project, location, name string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	job := &df.Job{Id: d.newID(), Name: name, ProjectId: project, Location: location, Type: "JOB_TYPE_STREAMING"}
	*jobs = append(*jobs, job)
	return job.Id
}

// DenyList makes the list of jobs fail with 403 PERMISSION_DENIED, as the service answers a caller
// without dataflow.jobs.list.
func (d *Dataflow) DenyList() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.denyList = true
}

// newID returns a new job id, in the form of Dataflow's: creation time and a number.
func (d *Dataflow) newID() string {
	d.seq++
	return fmt.Sprintf("%s-%019d", time.Now().UTC().Format("2006-01-02_15_04_05"), 4242424242424242420+d.seq)
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
	project, location := r.PathValue("project"), r.PathValue("location")
	for _, j := range d.all() {
		if j.Name != job.Name || j.ProjectId != project || j.Location != location || d.replaced[j.Id] {
			continue
		}
		if job.ReplaceJobId != j.Id {
			d.mu.Unlock()
			writeError(w, http.StatusConflict, fmt.Sprintf("(stand-in) There is already an active job named %s with id: %s. "+
				"If you want to submit a second job, try again by setting a different name.", job.Name, j.Id))
			return
		}
	}
	if job.ReplaceJobId != "" {
		if d.replaced == nil {
			d.replaced = map[string]bool{}
		}
		d.replaced[job.ReplaceJobId] = true
	}
	job.Id = d.newID()
	job.ProjectId = project
	job.Location = location
	job.CurrentState = "JOB_STATE_PENDING"
	job.CreateTime = time.Now().UTC().Format(time.RFC3339Nano)
	d.jobs = append(d.jobs, &job)
	d.raw = append(d.raw, body)
	d.mu.Unlock()
	writeJSON(w, &job)
}

// all returns the running jobs and the created ones; d.mu is held.
func (d *Dataflow) all() []*df.Job { return append(slices.Clone(d.running), d.jobs...) }

// state returns the current state of j; d.mu is held.
func (d *Dataflow) state(j *df.Job) *df.Job {
	c := *j
	c.CurrentState = "JOB_STATE_RUNNING"
	if d.replaced[j.Id] {
		c.CurrentState = "JOB_STATE_UPDATED"
	}
	return &c
}

func (d *Dataflow) find(r *http.Request) *df.Job {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, j := range d.all() {
		if j.Id == r.PathValue("id") && j.ProjectId == r.PathValue("project") && j.Location == r.PathValue("location") {
			return d.state(j)
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
	// filter=ACTIVE (what the SDK asks for, to find a job to replace) leaves out replaced jobs.
	active := r.URL.Query().Get("filter") == "ACTIVE"
	d.mu.Lock()
	if d.denyList {
		d.mu.Unlock()
		writeError(w, http.StatusForbidden, "(stand-in) Permission 'dataflow.jobs.list' denied on project "+r.PathValue("project"))
		return
	}
	var out []*df.Job
	for _, j := range d.all() {
		if j.ProjectId == r.PathValue("project") && j.Location == r.PathValue("location") && !(active && d.replaced[j.Id]) {
			out = append(out, d.state(j))
		}
	}
	d.running, d.later = append(d.running, d.later...), nil
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
