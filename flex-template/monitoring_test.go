package main

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"cloud.google.com/go/monitoring/apiv3/v2/monitoringpb"
	"cloud.google.com/go/monitoring/dashboard/apiv1/dashboardpb"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// metricKinds are the metric types the monitoring files may use, with the metric kind and the
// monitored resource of each, from Google's lists of metrics
// (https://cloud.google.com/monitoring/api/metrics_gcp: dataflow, pubsub; the kind of user_counter
// is not confirmed from here, docs/operations.md says so). dataflow.googleapis.com/job/user_counter is where
// Dataflow puts a job's Beam counters, one time series per counter (label metric_name), holding
// the counter's total.
var metricKinds = map[string]struct {
	kind, resource string
}{
	"dataflow.googleapis.com/job/user_counter":                      {"GAUGE", "dataflow_job"},
	"dataflow.googleapis.com/job/system_lag":                        {"GAUGE", "dataflow_job"},
	"dataflow.googleapis.com/job/data_watermark_age":                {"GAUGE", "dataflow_job"},
	"pubsub.googleapis.com/subscription/num_undelivered_messages":   {"GAUGE", "pubsub_subscription"},
	"pubsub.googleapis.com/subscription/oldest_unacked_message_age": {"GAUGE", "pubsub_subscription"},
}

// resourceLabels are the labels of the monitored resources.
var resourceLabels = map[string][]string{
	"dataflow_job":        {"project_id", "job_name", "region"},
	"pubsub_subscription": {"project_id", "subscription_id"},
}

// gaugeAligners are the aligners valid for a GAUGE metric of numbers (monitoringpb's
// Aggregation_Aligner comments); ALIGN_DELTA and ALIGN_RATE are for CUMULATIVE and DELTA ones.
var gaugeAligners = []monitoringpb.Aggregation_Aligner{
	monitoringpb.Aggregation_ALIGN_MEAN, monitoringpb.Aggregation_ALIGN_MAX, monitoringpb.Aggregation_ALIGN_MIN,
	monitoringpb.Aggregation_ALIGN_NEXT_OLDER, monitoringpb.Aggregation_ALIGN_INTERPOLATE,
}

// readMonitoring decodes the file name of flex-template/monitoring into m, as the Monitoring API
// reads it: protojson refuses an unknown field, a misspelt enum value, a wrong type.
func readMonitoring(t *testing.T, name string, m proto.Message) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("monitoring", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := protojson.Unmarshal(b, m); err != nil {
		t.Fatalf("monitoring/%s is not a valid %s: %v", name, m.ProtoReflect().Descriptor().FullName(), err)
	}
}

// TestMonitoringFiles decodes the dashboard and the two alert policies into the Monitoring API's
// messages and checks what the API would only check on a project: each filter's terms, metric
// type, resource type and labels, each aligner against the metric's kind, each PromQL selector's
// metric and counter names (the pipeline's own counters, read from its source), and that
// docs/operations.md explains every panel and policy.
func TestMonitoringFiles(t *testing.T) {
	counters := pipelineCounters(t)
	ops, err := os.ReadFile(filepath.Join("..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	explained := func(what, title string) {
		if !strings.Contains(string(ops), title) {
			t.Errorf("docs/operations.md does not explain the %s %q", what, title)
		}
	}

	var d dashboardpb.Dashboard
	readMonitoring(t, "dashboard.json", &d)
	tiles := d.GetMosaicLayout().GetTiles()
	if len(tiles) == 0 {
		t.Fatal("the dashboard has no tiles")
	}
	var used []string
	for _, tile := range tiles {
		w := tile.GetWidget()
		explained("panel", w.GetTitle())
		if tile.GetXPos()+tile.GetWidth() > d.GetMosaicLayout().GetColumns() {
			t.Errorf("panel %q: x %d + width %d exceeds the layout's %d columns", w.GetTitle(), tile.GetXPos(), tile.GetWidth(), d.GetMosaicLayout().GetColumns())
		}
		sets := w.GetXyChart().GetDataSets()
		if len(sets) == 0 {
			t.Errorf("panel %q has no data set", w.GetTitle())
		}
		for _, ds := range sets {
			q := ds.GetTimeSeriesQuery()
			switch {
			case q.GetTimeSeriesFilter() != nil:
				f := q.GetTimeSeriesFilter()
				a := f.GetAggregation()
				used = append(used, checkFilter(t, w.GetTitle(), f.GetFilter(), monitoringpb.Aggregation_Aligner(a.GetPerSeriesAligner()), a.GetGroupByFields()))
			case q.GetPrometheusQuery() != "":
				used = append(used, checkPromQL(t, w.GetTitle(), q.GetPrometheusQuery(), counters)...)
			default:
				t.Errorf("panel %q: a data set with neither a filter nor a PromQL query", w.GetTitle())
			}
		}
	}
	// The panels the issue asks for: the pipeline's counters, the subscription's backlog and
	// oldest unacked message, the job's system lag.
	for _, want := range []string{"dataflow.googleapis.com/job/user_counter", "pubsub.googleapis.com/subscription/num_undelivered_messages",
		"pubsub.googleapis.com/subscription/oldest_unacked_message_age", "dataflow.googleapis.com/job/system_lag"} {
		if !slices.Contains(used, want) {
			t.Errorf("the dashboard has no panel of %s", want)
		}
	}
	for _, f := range d.GetDashboardFilters() {
		if !slices.ContainsFunc(slices.Collect(maps.Values(resourceLabels)), func(l []string) bool { return slices.Contains(l, f.GetLabelKey()) }) {
			t.Errorf("dashboard filter on %q, a label of no resource of the panels", f.GetLabelKey())
		}
	}

	for _, file := range []string{"alert-dead-letters.json", "alert-oldest-unacked.json"} {
		var p monitoringpb.AlertPolicy
		readMonitoring(t, file, &p)
		explained("alert policy", p.GetDisplayName())
		if p.GetDocumentation().GetContent() == "" || p.GetCombiner() == monitoringpb.AlertPolicy_COMBINE_UNSPECIFIED || len(p.GetConditions()) == 0 {
			t.Errorf("%s: documentation, combiner and conditions must all be set", file)
		}
		for _, c := range p.GetConditions() {
			switch {
			case c.GetConditionThreshold() != nil:
				ct := c.GetConditionThreshold()
				for _, a := range ct.GetAggregations() {
					checkFilter(t, file, ct.GetFilter(), a.GetPerSeriesAligner(), a.GetGroupByFields())
				}
				if ct.GetComparison() == monitoringpb.ComparisonType_COMPARISON_UNSPECIFIED || ct.GetDuration().AsDuration() <= 0 {
					t.Errorf("%s: a threshold condition needs a comparison and a duration", file)
				}
			case c.GetConditionPrometheusQueryLanguage() != nil:
				cp := c.GetConditionPrometheusQueryLanguage()
				checkPromQL(t, file, cp.GetQuery(), counters)
				// The dead letters the job makes, stage by stage (docs/operations.md, "How they
				// relate"): a routed job whose messages lost their routing value made only
				// dead-letters-unrouted, and the policy did not fire.
				for _, n := range []string{"udf-failed", "rows-parse-failed", "rows-rejected-by-clickhouse", "dead-letters-unrouted"} {
					if file == "alert-dead-letters.json" && !strings.Contains(cp.GetQuery(), n) {
						t.Errorf("%s: the query %q leaves out the dead letters counted in %s", file, cp.GetQuery(), n)
					}
				}
				if !regexp.MustCompile(`\)\s*>\s*[0-9]+$`).MatchString(cp.GetQuery()) {
					t.Errorf("%s: the PromQL condition %q does not end with a threshold (> N)", file, cp.GetQuery())
				}
			default:
				t.Errorf("%s: condition %q is of a kind this test does not check", file, c.GetDisplayName())
			}
		}
	}
}

// filterTerm is one term of a Monitoring filter: metric.type="...", resource.label."x"="...".
var filterTerm = regexp.MustCompile(`^(metric\.type|resource\.type|resource\.label\."([a-z_]+)"|metric\.label\."([a-z_]+)")\s*(=|!=)\s*"([^"]*)"$`)

// checkFilter checks a Monitoring filter (terms joined by AND) and its aggregation, and returns
// its metric type.
func checkFilter(t *testing.T, where, filter string, aligner monitoringpb.Aggregation_Aligner, groupBy []string) string {
	t.Helper()
	terms := map[string]string{}
	var labels []string
	for _, term := range strings.Split(filter, " AND ") {
		m := filterTerm.FindStringSubmatch(strings.TrimSpace(term))
		if m == nil {
			t.Errorf("%s: filter term %q is not key=\"value\" (the form of https://cloud.google.com/monitoring/api/v3/filters)", where, term)
			continue
		}
		if m[2] != "" {
			labels = append(labels, m[2])
		}
		terms[m[1]] = m[5]
	}
	mt := terms["metric.type"]
	k, ok := metricKinds[mt]
	if !ok {
		t.Errorf("%s: metric type %q is not one of the known ones", where, mt)
		return mt
	}
	if rt := terms["resource.type"]; rt != k.resource {
		t.Errorf("%s: resource.type %q, but %s is written for %s", where, rt, mt, k.resource)
	}
	for _, g := range groupBy {
		labels = append(labels, strings.Trim(strings.TrimPrefix(g, "resource.label."), `"`))
	}
	for _, l := range labels {
		if !slices.Contains(resourceLabels[k.resource], l) {
			t.Errorf("%s: label %q is not a label of %s (%v)", where, l, k.resource, resourceLabels[k.resource])
		}
	}
	if k.kind == "GAUGE" && !slices.Contains(gaugeAligners, aligner) {
		t.Errorf("%s: aligner %v is not valid for the GAUGE metric %s", where, aligner, mt)
	}
	return mt
}

// promSelector is a PromQL selector in the UTF-8 form that Cloud Monitoring takes:
// {"__name__"="<metric type>","monitored_resource"="<resource>",...}[range].
var (
	promSelector = regexp.MustCompile(`\{([^{}]*)\}\[([0-9]+[smh])\]`)
	promMatcher  = regexp.MustCompile(`^"([a-z_]+)"(=|=~)"([^"]*)"$`)
	promOutside  = regexp.MustCompile(`^(sum by \([a-z_, ]+\) \(|sum \(|delta\(|\)|\s|>|[0-9]|SEL)+$`)
)

// checkPromQL checks a PromQL query: only sum, sum by and delta around selectors of known
// metrics with their monitored resource, balanced parentheses, and counter names that are the
// pipeline's. It returns the metric types.
func checkPromQL(t *testing.T, where, query string, counters []string) []string {
	t.Helper()
	if strings.Count(query, "(") != strings.Count(query, ")") {
		t.Errorf("%s: unbalanced parentheses in %q", where, query)
	}
	if rest := promSelector.ReplaceAllString(query, "SEL"); !promOutside.MatchString(rest) {
		t.Errorf("%s: %q uses more of PromQL than this test checks (sum, sum by, delta, a threshold)", where, query)
	}
	var types []string
	sels := promSelector.FindAllStringSubmatch(query, -1)
	if len(sels) == 0 {
		t.Errorf("%s: no selector in %q", where, query)
	}
	for _, sel := range sels {
		m := map[string]string{}
		for _, part := range strings.Split(sel[1], ",") {
			pm := promMatcher.FindStringSubmatch(part)
			if pm == nil {
				t.Errorf("%s: matcher %q is not \"label\"=\"value\" or \"label\"=~\"regex\"", where, part)
				continue
			}
			m[pm[1]] = pm[3]
			if pm[2] == "=~" {
				if _, err := regexp.Compile(pm[3]); err != nil {
					t.Errorf("%s: %s=~%q: %v", where, pm[1], pm[3], err)
				}
			}
		}
		k, ok := metricKinds[m["__name__"]]
		if !ok {
			t.Errorf("%s: metric %q is not one of the known ones", where, m["__name__"])
			continue
		}
		types = append(types, m["__name__"])
		if m["monitored_resource"] != k.resource {
			t.Errorf("%s: %s with monitored_resource %q, want %q", where, m["__name__"], m["monitored_resource"], k.resource)
		}
		if m["__name__"] == "dataflow.googleapis.com/job/user_counter" {
			names := strings.Split(m["metric_name"], "|")
			for _, n := range names {
				if !slices.Contains(counters, n) {
					t.Errorf("%s: metric_name %q is not a counter of the pipeline (%v)", where, n, counters)
				}
			}
		}
	}
	return types
}

// pipelineCounters returns the names of the pipeline's Beam counters, read from its source:
// every beam.NewCounter(flow.Namespace, "<name>") under transforms/.
func pipelineCounters(t *testing.T) []string {
	t.Helper()
	re := regexp.MustCompile(`beam\.NewCounter\(flow\.Namespace, "([^"]+)"\)`)
	var names []string
	err := filepath.WalkDir(filepath.Join("..", "transforms"), func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		for _, m := range re.FindAllSubmatch(b, -1) {
			names = append(names, string(m[1]))
		}
		return err
	})
	if err != nil || len(names) < 10 {
		t.Fatalf("the pipeline's counters: %v (found %q)", err, names)
	}
	return names
}
