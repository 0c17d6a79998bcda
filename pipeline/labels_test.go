package pipeline

import (
	"errors"
	"testing"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/psclient"
)

func TestLabelled(t *testing.T) {
	sub, _ := psclient.ParseSubscription("projects/my-project/subscriptions/events")
	topic, _ := psclient.ParseTopic("projects/my-project/topics/dead")
	config := &chclient.ConfigError{Param: "clickHousePassword", Hint: "refused", Err: errors.New("code 516")}
	for _, tc := range []struct {
		err   error
		param string
		want  string
	}{
		{&psclient.CheckError{Name: sub, Err: errors.New(sub.String() + " does not exist")}, "clickHouseTable",
			"inputSubscription projects/my-project/subscriptions/events does not exist"},
		{&psclient.CheckError{Name: topic, Err: errors.New(topic.String() + " does not exist")}, "",
			"deadLetterTopic projects/my-project/topics/dead does not exist"},
		{config, "clickHouseTable", config.Error()},
		{errors.New("table db.t does not exist"), "clickHouseTable", "clickHouseTable: table db.t does not exist"},
		{errors.New("connection refused"), "", "connection refused"},
	} {
		got := Labelled(tc.err, tc.param)
		if got.Error() != tc.want || !errors.Is(got, tc.err) {
			t.Errorf("Labelled(%q, %q) = %q, want %q wrapping the error", tc.err, tc.param, got, tc.want)
		}
	}
	if Labelled(nil, "clickHouseTable") != nil {
		t.Error("Labelled(nil) is not nil")
	}
}
