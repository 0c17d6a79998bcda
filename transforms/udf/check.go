package udf

import (
	"context"
	"fmt"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/text"
)

// Report is what Check found in the file.
type Report struct {
	// Functions are the global functions the file defines, sorted.
	Functions []string
	// EmptyPayload is what the function did with an empty payload: "dropped it", "returned ..."
	// or its error. Not a failure: a function may well refuse an empty payload.
	EmptyPayload string
}

// Check reads the file of cfg, compiles it, runs its top-level code, finds the function and
// calls it once on an empty payload, as every worker does at start-up (but the call). Call it
// when the pipeline is launched, so that a file that cannot be read, is not valid JavaScript or
// lacks the function stops the launch. The error names the parameter at fault
// (javascriptTextTransformGcsPath or javascriptTextTransformFunctionName); what the call on the
// empty payload did is in the Report, not an error.
func Check(ctx context.Context, cfg Config) (Report, error) {
	l := loader{Config: cfg}
	defer l.close()
	if err := l.open(ctx); err != nil {
		return Report{}, err
	}
	fn, _, err := l.load(ctx)
	if err != nil {
		return Report{}, err
	}
	defer fn.close()
	r := Report{Functions: fn.defined}
	switch out, drop, err := fn.Apply("", messageInfo{Attributes: map[string]string{}}); {
	case err != nil:
		r.EmptyPayload = err.Error()
	case drop:
		r.EmptyPayload = "dropped it"
	default:
		r.EmptyPayload = fmt.Sprintf("returned %q", text.Cut(out, 100))
	}
	return r, nil
}
