// Command aiq-realcluster runs the real Kubernetes control plane on
// loopback for aiq's end-to-end tests: an embedded etcd, the real
// kube-apiserver (in this process), the real kube-scheduler and a
// kube-controller-manager with only the controllers a queue needs (each
// in its own process: they clash on global registries), fake GPU nodes
// read from the same --nodes file the local server (aiq-apiserver) reads,
// and a kubelet stand-in that runs bound pods for their simulated time.
//
// It takes the local server's flags, so the e2e suites start either one
// the same way, and writes a kubeconfig that kubectl and the operator use
// unchanged. It is test infrastructure: the product is the C operator.
//
// The same binary is re-executed as "aiq-realcluster kube-scheduler ..."
// and "aiq-realcluster kube-controller-manager ..." for the child
// processes.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "kube-scheduler":
			os.Exit(runScheduler(os.Args[2:]))
		case "kube-controller-manager":
			os.Exit(runControllerManager(os.Args[2:]))
		}
	}
	cfg, err := parseFlags(os.Args[1:])
	if err == errHelp {
		usage(os.Stdout)
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "aiq-realcluster: %v\n", err)
		usage(os.Stderr)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintf(os.Stderr, "aiq-realcluster: %v\n", err)
		os.Exit(1)
	}
}
