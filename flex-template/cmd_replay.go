package main

import "context"

func runReplay(ctx context.Context, cio *cmdIO, args []string) int { return exitFailed }
