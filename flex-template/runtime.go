package main

import "github.com/ch-beam/pubsub-to-clickhouse/pipeline/runtimeconfig"

// The garbage collector's settings and gRPC's buffer pool, made before anything else runs.
func init() { runtimeconfig.Apply() }
