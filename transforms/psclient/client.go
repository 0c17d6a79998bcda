package psclient

import (
	"context"
	"fmt"
	"os"
	"strings"

	"cloud.google.com/go/pubsub/v2"
)

// CredentialsHint is what an error says when the Pub/Sub client finds no credentials: the two
// ways a run gets them.
const CredentialsHint = "no credentials for Pub/Sub: a local run against the emulator needs PUBSUB_EMULATOR_HOST=host:port " +
	"(what the emulator prints, e.g. export PUBSUB_EMULATOR_HOST=127.0.0.1:8085), and a run against Google Cloud needs " +
	"Application Default Credentials (gcloud auth application-default login, or GOOGLE_APPLICATION_CREDENTIALS naming a service account's key file)"

// NewClient creates the Pub/Sub client of project, as pubsub.NewClient does (it honours
// PUBSUB_EMULATOR_HOST). When it finds no credentials (PUBSUB_EMULATOR_HOST unset and no
// Application Default Credentials), the error starts with CredentialsHint and quotes the
// client's own after it.
func NewClient(ctx context.Context, project string) (*pubsub.Client, error) {
	c, err := pubsub.NewClient(ctx, project)
	if err != nil && os.Getenv("PUBSUB_EMULATOR_HOST") == "" && strings.Contains(err.Error(), "could not find default credentials") {
		return nil, fmt.Errorf("%s (%w)", CredentialsHint, err)
	}
	return c, err
}
