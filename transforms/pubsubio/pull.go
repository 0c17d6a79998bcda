package pubsubio

import (
	"fmt"

	pb "google.golang.org/genproto/googleapis/pubsub/v1"
	"google.golang.org/protobuf/encoding/protowire"
)

// The field numbers of google.pubsub.v1.PullResponse and ReceivedMessage.
const (
	fieldReceivedMessages = 1

	fieldAckID           = 1
	fieldMessage         = 2
	fieldDeliveryAttempt = 3
)

// DecodePullResponse decodes a serialized google.pubsub.v1.PullResponse into resp, appending to
// its ReceivedMessages, for the local reader's Pulls (transforms/source). Each message is decoded
// as Decode decodes one: its Data shares b, unknown fields are dropped and strings (the ack id
// among them) are taken as they are. A message field given twice in a ReceivedMessage is merged,
// as proto.Unmarshal merges it. proto.Unmarshal of the same response takes about three times as
// long and copies every payload out of b (BenchmarkDecodePullResponse). Messages whose attribute
// fields are the same bytes share one map (sharedAttributes), which is therefore read only: a
// caller that changes a message's attributes changes the others'. It returns an error when b is
// not the wire format; resp then holds the messages decoded before it.
func DecodePullResponse(b []byte, resp *pb.PullResponse) error {
	var last sharedAttributes
	for len(b) > 0 {
		num, typ, v, _, rest, err := nextField(b)
		if err != nil {
			return pullError(err)
		}
		b = rest
		if num != fieldReceivedMessages || typ != protowire.BytesType {
			continue
		}
		rm := new(pb.ReceivedMessage)
		if err := decodeReceived(v, rm, &last); err != nil {
			return pullError(err)
		}
		resp.ReceivedMessages = append(resp.ReceivedMessages, rm)
	}
	return nil
}

// decodeReceived decodes a google.pubsub.v1.ReceivedMessage into rm.
func decodeReceived(b []byte, rm *pb.ReceivedMessage, last *sharedAttributes) error {
	for len(b) > 0 {
		num, typ, v, x, rest, err := nextField(b)
		if err != nil {
			return err
		}
		b = rest
		switch {
		case num == fieldAckID && typ == protowire.BytesType:
			rm.AckId = string(v)
		case num == fieldMessage && typ == protowire.BytesType:
			if rm.Message == nil {
				rm.Message = new(pb.PubsubMessage)
			}
			if err := decodeInto(v, rm.Message, last); err != nil {
				return err
			}
		case num == fieldDeliveryAttempt && typ == protowire.VarintType:
			rm.DeliveryAttempt = int32(x)
		}
	}
	return nil
}

func pullError(err error) error {
	return fmt.Errorf("pubsubio: decoding a PullResponse: %w", err)
}
