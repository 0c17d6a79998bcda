package source

import (
	"fmt"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/pubsubio"
)

// pullCodec is gRPC's proto codec (google.golang.org/grpc/encoding/proto) for the reader's Pull
// calls (grpc.ForceCodecV2), but for the responses: it copies a response's bytes out of gRPC's
// buffers once and decodes them with pubsubio.DecodePullResponse, the messages' payloads left in
// that copy. gRPC's codec copies the response into a pooled buffer and proto.Unmarshal then
// copies every payload out of it, with about three times the time and allocations for the rest
// (BenchmarkDecodePullResponse in transforms/pubsubio). Its name is empty, so that the call's
// content-type stays "application/grpc", as without it: gRPC takes a forced codec's name as the
// content-subtype ("application/grpc+proto" for the proto codec's name), and Google's API
// endpoints, Pub/Sub's among them, answer that with an HTTP 404, which gRPC reports as
// Unimplemented (github.com/googleapis/googleapis.github.io/issues/27,
// github.com/tsloughter/grpcbox/issues/60). The emulator takes either, so TestPullContentType
// records the header a server receives.
//
// The copy holds a whole response, up to maxPullResponseBytes, for as long as any of its payloads
// is referenced: until the parse stage has packed the rows of the response (or dead-lettered
// them), as the payloads copied one by one were.
type pullCodec struct{}

var protoCodec = encoding.GetCodecV2(proto.Name)

// Marshal encodes v (the Pull request) as gRPC's proto codec does.
func (pullCodec) Marshal(v any) (mem.BufferSlice, error) { return protoCodec.Marshal(v) }

// Unmarshal decodes a PullResponse with pubsubio.DecodePullResponse, and anything else as gRPC's
// proto codec does.
func (pullCodec) Unmarshal(data mem.BufferSlice, v any) error {
	resp, ok := v.(*pubsubpb.PullResponse)
	if !ok {
		return protoCodec.Unmarshal(data, v)
	}
	if err := pubsubio.DecodePullResponse(data.Materialize(), resp); err != nil {
		return fmt.Errorf("source: %w", err)
	}
	return nil
}

// Name is empty: the content-type stays "application/grpc" (above).
func (pullCodec) Name() string { return "" }
