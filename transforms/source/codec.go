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
// (BenchmarkDecodePullResponse in transforms/pubsubio). Its name is the proto codec's, so the
// request's content-type is "application/grpc+proto", which gRPC servers take as the default
// "application/grpc" (https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-HTTP2.md).
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

// Name is the proto codec's name, "proto".
func (pullCodec) Name() string { return proto.Name }
