// Package pipeline holds the streaming Beam pipeline that reads JSON messages
// from a Pub/Sub subscription and inserts them as rows into ClickHouse,
// launched as a Dataflow Flex Template.
//
// Its template parameters are [Options], with their flags ([RegisterFlags])
// and their checks ([Options.Validate]). A Flex Template passes each template
// parameter to the launcher as a Go flag of the same name, --name=value.
//
// One table (params.go, in two parts: params_endpoints.go and params_processing.go) describes
// each parameter once: its name, its group in the Flex Template metadata, its field of Options,
// its kind of value, its default, whether it is required, its rule, and its texts: the flag's
// usage, the console's label and help, and the reference's text. The flags (flags.go), the
// defaults, the checks (validate.go) and the printing (print.go) are all read from it;
// [Parameters] lists it, and go generate writes metadata.json and docs/parameters.md from that
// list (internal/gen).
package pipeline

import "github.com/ch-beam/pubsub-to-clickhouse/transforms/secret"

// Options are the template parameters: each field is the flag of the name in its comment, whose
// meaning, default and rule are the parameter table's (params_endpoints.go and
// params_processing.go; docs/parameters.md is written from it). [Defaults] gives the defaults
// and [Options.Validate] checks the values.
//
// Build copies the connection parameters into the stages' chclient.Config,
// which Beam serializes with the DoFns (as JSON) so that it reaches the
// workers; no DoFn holds Options itself. When clickHousePassword names a
// Secret Manager secret version, that name is all the DoFns hold, and each
// worker reads the password in Setup; a password given as text travels with
// the DoFns. Any printing of Options hides a password: String, GoString and
// every fmt verb (Options implements [fmt.Formatter]) show "xxxxx" instead,
// and hide the password in the userinfo and query of clickHouseUrl too.
type Options struct {
	InputSubscription           string        // inputSubscription; see [psclient.ParseSubscription]
	ClickHouseURL               string        // clickHouseUrl; printed with its passwords hidden ([Options.RedactedURL])
	ClickHouseDatabase          string        // clickHouseDatabase
	ClickHouseTable             string        // clickHouseTable
	ClickHouseUsername          string        // clickHouseUsername
	ClickHousePassword          secret.String // clickHousePassword: a password or a secret version's name (package secret); a password never prints itself
	ClickHouseCaCertificate     string        // clickHouseCaCertificate
	ClickHouseClientCertificate string        // clickHouseClientCertificate
	ClickHouseClientKey         string        // clickHouseClientKey
	ClickHouseCompression       string        // clickHouseCompression

	ClickHouseDeadLetterTable string // clickHouseDeadLetterTable
	DeadLetterTopic           string // deadLetterTopic; see [psclient.ParseTopic]

	WindowSeconds             OptionalInt // windowSeconds
	BatchRowCount             OptionalInt // batchRowCount
	BatchByteSize             int         // batchByteSize
	MaxInsertBlockSize        int         // maxInsertBlockSize
	MaxRetries                int         // maxRetries
	RetryInitialBackoffMillis int         // retryInitialBackoffMillis
	RetryMaxBackoffMillis     int         // retryMaxBackoffMillis
	InsertDeduplicate         bool        // insertDeduplicate
	InsertQuorum              OptionalInt // insertQuorum
	InsertDistributedSync     bool        // insertDistributedSync
	NumShards                 int         // numShards; 0 is resolved by [Options.Shards]
	ShuffleCompression        string      // shuffleCompression; see [flow.ParseCompression]

	StopAfterIdle   OptionalInt // stopAfterIdle, for the local runner only
	ProgressSeconds int         // progressSeconds, for the local runner only

	SchemaRefreshSeconds int    // schemaRefreshSeconds
	MetadataColumns      string // metadataColumns; see convert.ParseMetadataColumns
	UnknownFieldsColumn  string // unknownFieldsColumn
	RouteBy              string // routeBy; see route.ParseBy
	RouteTables          string // routeTables; see route.ParseTables
	RouteUnlisted        string // routeUnlisted: "", "clickHouseTable" or "deadLetter"

	AddNewColumns          bool   // addNewColumns
	AddNewColumnsMax       int    // addNewColumnsMax
	AddNewColumnsPattern   string // addNewColumnsPattern, RE2
	AddNewColumnsExcluded  string // addNewColumnsExcluded; comma-separated names
	AddNewColumnsOnCluster string // addNewColumnsOnCluster

	JavascriptTextTransformGcsPath               string // javascriptTextTransformGcsPath
	JavascriptTextTransformFunctionName          string // javascriptTextTransformFunctionName
	JavascriptTextTransformReloadIntervalMinutes int    // javascriptTextTransformReloadIntervalMinutes
}

// Defaults returns the parameters as they are before any flag is given: each parameter that has
// a default (in the table) set to it, every other one empty or unset.
func Defaults() Options {
	var o Options
	for _, p := range parameters {
		switch p.kind {
		case kindInt:
			*p.field(&o).(*int) = p.def.(int)
		case kindBool:
			*p.field(&o).(*bool) = p.def.(bool)
		}
	}
	return o
}
