package main

import "context"

func runPublish(ctx context.Context, cio *cmdIO, args []string) int { return exitFailed }
