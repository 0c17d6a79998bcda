// The labels of the start-up checks' errors: the plumbing names what failed (a subscription, a
// table, a server), and Labelled names the template parameter that gave it, once.

package pipeline

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/psclient"
)

// Labelled returns err, an error of a start-up check, as the user reads it: starting with the
// template parameter to fix. param is the parameter of the check that failed (for parse.CheckWith,
// clickHouseTable); "" leaves an error of no known type as it is.
//
//   - a *psclient.CheckError is labelled inputSubscription or deadLetterTopic, by the
//     collection of its name: `inputSubscription projects/p/subscriptions/s does not exist: ...`;
//   - a *chclient.ConfigError is labelled with the parameter of its field (ClickHouseParam), in
//     place of the field's plain words, and so are the other fields its hint names:
//     `clickHouseUrl: nothing listens at ...`, `... check clickHouseUsername and clickHousePassword`;
//   - a *convert.OptionError names its parameter already (convert.Option) and is returned as
//     it is, unwrapped from the table's context, so that the parameter comes first
//     (`metadataColumns: pair "message_id=msg_id": the table events has no column ...`);
//   - a ClickHouse exception 115 (UNKNOWN_SETTING, on the first query), or clickhouse-go's
//     "unsupported data type" of a setting, comes from an option of clickHouseUrl that is not one
//     of clickhouse-go's, which the driver sends as a setting;
//   - any other error is labelled param: `clickHouseTable: ...`.
func Labelled(err error, param string) error {
	var ce *chclient.ConfigError
	var oe *convert.OptionError
	var pe *psclient.CheckError
	var ex *clickhouse.Exception
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce):
		return &labelled{strings.Replace(err.Error(), ce.Error(), ce.Text(ClickHouseParam), 1), err}
	case errors.As(err, &oe):
		return oe // it names its parameter (metadataColumns, unknownFieldsColumn), which the table's context would only push back
	case errors.As(err, &pe):
		return fmt.Errorf("%s %w", pubsubParam[pe.Name.Collection], err)
	case textSetting.MatchString(err.Error()):
		// clickhouse-go sends an option it does not know as a setting, and cannot send a text
		// one over the native protocol.
		return fmt.Errorf("%s: the option %s of the URL is none of clickhouse-go's, so it is sent to the server as a setting, and "+
			"clickhouse-go sends no setting of text over the native protocol: set it in the user's profile on the server, or use "+
			"http:// or https://; or, if it is no setting, check its spelling (%w)",
			ClickHouseParam(chclient.FieldURL), textSetting.FindStringSubmatch(err.Error())[1], err)
	case errors.As(err, &ex) && ex.Code == 115:
		return fmt.Errorf("%s: the server has no setting of that name: an option of the URL that is not one of clickhouse-go's "+
			"is sent to the server as a setting; check its spelling (%w)", ClickHouseParam(chclient.FieldURL), err)
	case param != "":
		return fmt.Errorf("%s: %w", param, err)
	}
	return err
}

// FirstQuery runs the first query of a connection just opened with o's ClickHouse parameters,
// SELECT 1, which carries the settings that the options of clickHouseUrl not clickhouse-go's own
// become (a ping carries none; over HTTP the driver's hello query does). Its error is labelled as
// LabelledSettings says.
func FirstQuery(ctx context.Context, conn driver.Conn, o Options) error {
	return LabelledSettings(conn.Exec(ctx, "SELECT 1"), o)
}

// LabelledSettings is Labelled(err, "") for an error of opening a connection with o's ClickHouse
// parameters or of its first query (FirstQuery). When clickHouseUrl has options that clickhouse-go
// sends to the server as settings, a ClickHouse exception for a setting's value
// (settingValueCodes) that names no parameter of its own (as the wrong password does) is put
// down to them: a value the server cannot read
// (max_execution_time=abc over HTTP, code 72) was otherwise reported as the next check's
// (clickHouseTable: reading the server time zone: ...). Without such options it is left as it is.
func LabelledSettings(err error, o Options) error {
	var ce *chclient.ConfigError
	var ex *clickhouse.Exception
	if errors.As(err, &ex) && ex.Code == 115 && garbledSetting.MatchString(ex.Message) {
		// Not a name the URL gave: the server read the settings out of step. The server's text is
		// quoted, its name being bytes of the value (a raw NUL in the error line otherwise).
		return &labelled{text: fmt.Sprintf("%s: the server misread the settings of the URL: over the native protocol, clickhouse-go sends each setting "+
			"as an unsigned number to a server of protocol revision 54429 or below (ClickHouse 18.16 is 54412), so a negative "+
			"value (as max_threads=-1) reaches it as another and puts it out of step; give such a setting in the user's profile "+
			"on the server, or use http:// or https:// (%s)", ClickHouseParam(chclient.FieldURL), strconv.QuoteToGraphic(err.Error())), err: err}
	}
	if errors.As(err, &ex) && settingValueCodes[ex.Code] && !errors.As(err, &ce) {
		if names := o.urlSettings(); len(names) > 0 {
			return fmt.Errorf("%s: the server refused a setting of the URL (%s: the options that are not clickhouse-go's are sent to "+
				"the server as settings): check their values (%w)", ClickHouseParam(chclient.FieldURL), strings.Join(names, ", "), err)
		}
	}
	return Labelled(err, "")
}

// settingValueCodes are the codes of ClickHouse's exceptions for a setting's value it cannot take
// (ClickHouse's src/Common/ErrorCodes.cpp); another exception of a first query (too many
// queries, a quota, a timeout) is not put down to the URL's settings.
var settingValueCodes = map[int32]bool{
	6:   true, // CANNOT_PARSE_TEXT
	26:  true, // CANNOT_PARSE_QUOTED_STRING
	27:  true, // CANNOT_PARSE_INPUT_ASSERTION_FAILED (max_block_size=abc)
	36:  true, // BAD_ARGUMENTS
	38:  true, // CANNOT_PARSE_DATE
	41:  true, // CANNOT_PARSE_DATETIME
	69:  true, // ARGUMENT_OUT_OF_BOUND
	70:  true, // CANNOT_CONVERT_TYPE
	72:  true, // CANNOT_PARSE_NUMBER (max_execution_time=abc over HTTP)
	164: true, // READONLY (a setting changed by a readonly user)
	212: true, // UNKNOWN_LOAD_BALANCING (load_balancing=bogus)
	452: true, // SETTING_CONSTRAINT_VIOLATION
	471: true, // INVALID_SETTING_VALUE
}

// garbledSetting matches the message of ClickHouse's exception 115 when the name it gives is no
// name the URL can have sent: empty, or with a byte that is not printable ASCII
// ("Unknown setting \x00", from a negative number sent as an unsigned one).
var garbledSetting = regexp.MustCompile(`Unknown setting (\S*[^\x20-\x7e]|\s*$)`)

// urlSettings returns the names of the options of clickHouseUrl that clickhouse-go sends to the
// server as settings, sorted; none when the URL cannot be parsed (Validate says why).
func (o Options) urlSettings() []string {
	opts, err := o.ClickHouse().Options()
	if err != nil || opts == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(opts.Settings))
}

// textSetting matches clickhouse-go's error for a setting of text on the native protocol, and
// names the setting.
var textSetting = regexp.MustCompile(`query setting (\S+) has unsupported data type`)

// labelled is an error with the text Labelled gives it.
type labelled struct {
	text string
	err  error
}

func (l *labelled) Error() string { return l.text }
func (l *labelled) Unwrap() error { return l.err }

// clickHouseParam is the template parameter of each field of chclient.Config that a
// *chclient.ConfigError names.
var clickHouseParam = map[chclient.Field]string{
	chclient.FieldURL:               "clickHouseUrl",
	chclient.FieldDatabase:          "clickHouseDatabase",
	chclient.FieldUsername:          "clickHouseUsername",
	chclient.FieldPassword:          "clickHousePassword",
	chclient.FieldCACertificate:     "clickHouseCaCertificate",
	chclient.FieldClientCertificate: "clickHouseClientCertificate",
	chclient.FieldClientKey:         "clickHouseClientKey",
	chclient.FieldCompression:       "clickHouseCompression",
}

// ClickHouseParam returns the template parameter of a field of chclient.Config: "clickHouseUrl"
// for chclient.FieldURL.
func ClickHouseParam(f chclient.Field) string {
	if p, ok := clickHouseParam[f]; ok {
		return p
	}
	return f.String()
}

// pubsubParam is the template parameter of each collection of Pub/Sub names.
var pubsubParam = map[psclient.Collection]string{
	psclient.Subscriptions: "inputSubscription",
	psclient.Topics:        "deadLetterTopic",
}

// Subscription returns inputSubscription as a Pub/Sub name; o must be valid (Options.Validate).
func (o Options) Subscription() psclient.Name {
	n, err := psclient.ParseSubscription(o.InputSubscription)
	if err != nil {
		panic(fmt.Sprintf("pipeline: inputSubscription: %v", err)) // Validate refuses it
	}
	return n
}

// Topic returns deadLetterTopic as a Pub/Sub name, and whether it is set; o must be valid
// (Options.Validate).
func (o Options) Topic() (psclient.Name, bool) {
	if o.DeadLetterTopic == "" {
		return psclient.Name{}, false
	}
	n, err := psclient.ParseTopic(o.DeadLetterTopic)
	if err != nil {
		panic(fmt.Sprintf("pipeline: deadLetterTopic: %v", err)) // Validate refuses it
	}
	return n, true
}
