// The parameters of the subcommands: a subset of the parameter table, with the same flags and
// rules as the template's.

package pipeline

import (
	"flag"
	"fmt"
	"slices"
)

// ConnectionParams are the parameters of the ClickHouse connection: the URL, the database, the
// user, the password and the TLS material, in table order.
var ConnectionParams = []string{
	"clickHouseUrl", "clickHouseDatabase", "clickHouseUsername", "clickHousePassword",
	"clickHouseCaCertificate", "clickHouseClientCertificate", "clickHouseClientKey",
}

// UDFParams are the parameters of the JavaScript UDF.
var UDFParams = []string{
	"javascriptTextTransformGcsPath", "javascriptTextTransformFunctionName",
}

// RegisterFlagsOf is [RegisterFlags] for the named parameters only: it sets *o to [Defaults]
// and defines on fs the flags of names, with the usage and the value parsing of the template's.
// It panics if a name is not a parameter, or if fs already defines one of them.
func RegisterFlagsOf(fs *flag.FlagSet, o *Options, names ...string) {
	if fs == nil || o == nil {
		panic("pipeline.RegisterFlagsOf: nil *flag.FlagSet or *Options")
	}
	*o = Defaults()
	for _, name := range names {
		i := paramIndex(name)
		if i < 0 {
			panic(fmt.Sprintf("pipeline.RegisterFlagsOf: %q is not a template parameter", name))
		}
		registerFlag(fs, parameters[i], o)
	}
}

// ValidateOf is [Options.Validate] for the named parameters only: the rules of each, and the rules
// across parameters whose parameters are all named (a dead-letter destination needs both
// clickHouseDeadLetterTable and deadLetterTopic named; the UDF's file and function both UDF
// parameters). The errors are *ParamError, joined, in table order.
func (o Options) ValidateOf(names ...string) error {
	return o.validate(func(name string) bool { return slices.Contains(names, name) })
}
