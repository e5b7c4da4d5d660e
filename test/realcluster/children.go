package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	kcmapp "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	schedapp "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

// runScheduler is the child process "aiq-realcluster kube-scheduler ARGS":
// the real kube-scheduler command with ARGS.
func runScheduler(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	cmd := schedapp.NewSchedulerCommand()
	cmd.SetArgs(args)
	cmd.SilenceUsage = true
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "kube-scheduler: %v\n", err)
		return 1
	}
	return 0
}

// runControllerManager is the child process "aiq-realcluster
// kube-controller-manager ARGS": the real kube-controller-manager command.
func runControllerManager(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	cmd := kcmapp.NewControllerManagerCommand()
	cmd.SetArgs(args)
	cmd.SilenceUsage = true
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "kube-controller-manager: %v\n", err)
		return 1
	}
	return 0
}
