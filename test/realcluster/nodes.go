package main

import (
	"fmt"
	"hash/fnv"
	"os"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// The nodes file is the local server's (test/apiserver/sim_nodes.c): a
// list, or a map with a "nodes" list, of
//
//   - name: gpu-a            # with count: gpu-a-0 .. gpu-a-(count-1)
//     count: 2
//     gpus: 8
//     gpuProduct: NVIDIA-A100-SXM4-80GB
//     gpuMemoryMiB: 81920
//     cpu: "96"
//     memory: 1Ti
//     domain: a
//     unschedulable: false
//     labels: {rack: r1}
//     taints: [{key: dedicated, value: infer, effect: NoSchedule}]
//
// and the Nodes made from it carry the same labels (the NVIDIA GPU feature
// discovery ones), capacity and addresses as the local server's.
type nodeEntry struct {
	Name          string         `json:"name"`
	Count         *int           `json:"count"`
	GPUs          int64          `json:"gpus"`
	GPUProduct    string         `json:"gpuProduct"`
	GPUMemoryMiB  int64          `json:"gpuMemoryMiB"`
	CPU           any            `json:"cpu"`
	Memory        any            `json:"memory"`
	Domain        string         `json:"domain"`
	Unschedulable bool           `json:"unschedulable"`
	Labels        map[string]any `json:"labels"`
	Taints        []corev1.Taint `json:"taints"`
}

// nodeSpec is one Node to create, with the index that picks its address.
type nodeSpec struct {
	node *corev1.Node
	ip   string
}

const maxNodesPerEntry = 5000

func text(v any, dflt string) (string, error) {
	switch x := v.(type) {
	case nil:
		return dflt, nil
	case string:
		return x, nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case bool:
		return strconv.FormatBool(x), nil
	}
	return "", fmt.Errorf("want a string or number, got %v", v)
}

func loadNodes(path string) ([]nodeSpec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open nodes file %s: %v", path, err)
	}
	var entries []nodeEntry
	if err := yaml.UnmarshalStrict(b, &entries); err != nil {
		var wrapped struct {
			Nodes []nodeEntry `json:"nodes"`
		}
		if err2 := yaml.UnmarshalStrict(b, &wrapped); err2 != nil {
			return nil, fmt.Errorf("nodes file %s: %v", path, err)
		}
		entries = wrapped.Nodes
	}
	var out []nodeSpec
	for i, e := range entries {
		if e.Name == "" {
			return nil, fmt.Errorf("nodes file: entry %d: name: Required value", i)
		}
		if e.GPUs < 0 || e.GPUMemoryMiB < 0 || (e.Count != nil && *e.Count < 0) {
			return nil, fmt.Errorf("nodes file: entry %d: gpus, gpuMemoryMiB and count must be non-negative", i)
		}
		if e.Count != nil && *e.Count > maxNodesPerEntry {
			return nil, fmt.Errorf("nodes file: entry %d: count %d is above %d", i, *e.Count, maxNodesPerEntry)
		}
		cpu, err := text(e.CPU, "32")
		if err != nil {
			return nil, fmt.Errorf("nodes file: entry %d: cpu: %v", i, err)
		}
		mem, err := text(e.Memory, "256Gi")
		if err != nil {
			return nil, fmt.Errorf("nodes file: entry %d: memory: %v", i, err)
		}
		cpuQ, err := resource.ParseQuantity(cpu)
		if err != nil {
			return nil, fmt.Errorf("nodes file: entry %d: invalid cpu quantity %q", i, cpu)
		}
		memQ, err := resource.ParseQuantity(mem)
		if err != nil {
			return nil, fmt.Errorf("nodes file: entry %d: invalid memory quantity %q", i, mem)
		}
		n := 1
		if e.Count != nil {
			n = *e.Count
		}
		for j := 0; j < n; j++ {
			name := e.Name
			if e.Count != nil {
				name = fmt.Sprintf("%s-%d", e.Name, j)
			}
			idx := len(out)
			ip := fmt.Sprintf("10.0.%d.%d", idx/250, idx%250+2)
			node, err := buildNode(&e, name, cpuQ, memQ)
			if err != nil {
				return nil, fmt.Errorf("nodes file: entry %d: %v", i, err)
			}
			out = append(out, nodeSpec{node: node, ip: ip})
		}
	}
	return out, nil
}

func buildNode(e *nodeEntry, name string, cpu, mem resource.Quantity) (*corev1.Node, error) {
	lb := map[string]string{
		"kubernetes.io/hostname":           name,
		"kubernetes.io/os":                 "linux",
		"kubernetes.io/arch":               "amd64",
		"beta.kubernetes.io/os":            "linux",
		"beta.kubernetes.io/arch":          "amd64",
		"node.kubernetes.io/instance-type": "aiq-sim",
	}
	if e.GPUs > 0 || e.GPUProduct != "" {
		lb["nvidia.com/gpu.count"] = strconv.FormatInt(e.GPUs, 10)
		lb["nvidia.com/gpu.present"] = "true"
		if e.GPUProduct != "" {
			lb["nvidia.com/gpu.product"] = e.GPUProduct
		}
		if e.GPUMemoryMiB > 0 {
			lb["nvidia.com/gpu.memory"] = strconv.FormatInt(e.GPUMemoryMiB, 10)
		}
	}
	if e.Domain != "" {
		lb["aiq.dev/domain"] = e.Domain
	}
	for k, v := range e.Labels {
		s, err := text(v, "")
		if err != nil {
			return nil, fmt.Errorf("labels.%s: %v", k, err)
		}
		lb[k] = s
	}
	res := corev1.ResourceList{
		corev1.ResourceCPU:              cpu,
		corev1.ResourceMemory:           mem,
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: resource.MustParse("500Gi"),
	}
	if e.GPUs > 0 {
		res["nvidia.com/gpu"] = *resource.NewQuantity(e.GPUs, resource.DecimalSI)
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	id := fmt.Sprintf("%08x-sim", h.Sum32())
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lb},
		Spec:       corev1.NodeSpec{Unschedulable: e.Unschedulable, Taints: e.Taints},
		Status: corev1.NodeStatus{
			Capacity:    res,
			Allocatable: res.DeepCopy(),
			NodeInfo: corev1.NodeSystemInfo{
				MachineID: id, SystemUUID: id, BootID: id,
				KernelVersion: "6.1.0-aiq-sim", OSImage: "aiq simulated node",
				ContainerRuntimeVersion: "containerd://1.7.24",
				KubeletVersion:          "v1.34.4", KubeProxyVersion: "v1.34.4",
				OperatingSystem: "linux", Architecture: "amd64",
			},
		},
	}, nil
}
