package metadata

import (
	"errors"
	"fmt"
	"slices"
)

func validateTopicName(name string) error {
	if name == "" {
		return errors.New("empty topic name")
	}
	if len(name) > MaxTopicNameLen {
		return fmt.Errorf("topic name of %d bytes exceeds %d", len(name), MaxTopicNameLen)
	}
	return nil
}

func validateBroker(b *Broker) error {
	if b.ID < 0 {
		return fmt.Errorf("negative broker id %d", b.ID)
	}
	if b.Epoch < 0 {
		return fmt.Errorf("negative broker epoch %d", b.Epoch)
	}
	if b.ReplicaCapacity < 0 || b.OpenFilesLimit < 0 {
		return fmt.Errorf("negative replica capacity %d or open-files limit %d", b.ReplicaCapacity, b.OpenFilesLimit)
	}
	if len(b.Endpoints) > MaxEndpoints {
		return fmt.Errorf("%d endpoints exceed the limit of %d", len(b.Endpoints), MaxEndpoints)
	}
	for _, e := range b.Endpoints {
		if e.Port < 0 || e.Port > 65535 {
			return fmt.Errorf("endpoint %q: port %d out of range", e.Listener, e.Port)
		}
	}
	if len(b.LogDirs) > MaxLogDirs {
		return fmt.Errorf("%d log dirs exceed the limit of %d", len(b.LogDirs), MaxLogDirs)
	}
	for i, d := range b.LogDirs {
		if d.IsZero() {
			return errors.New("zero log dir id")
		}
		if slices.Contains(b.LogDirs[:i], d) {
			return fmt.Errorf("log dir id %s listed twice", d)
		}
	}
	return nil
}

func validateConfigs(configs map[string]string) error {
	if len(configs) > MaxConfigsPerTopic {
		return fmt.Errorf("%d config overrides exceed the limit of %d", len(configs), MaxConfigsPerTopic)
	}
	for k, v := range configs {
		if err := validateConfigEntry(k, &v); err != nil {
			return err
		}
	}
	return nil
}

func validateConfigEntry(key string, value *string) error {
	if key == "" || len(key) > MaxConfigKeyLen {
		return fmt.Errorf("config key length %d outside 1..%d", len(key), MaxConfigKeyLen)
	}
	if value != nil && len(*value) > MaxConfigValueLen {
		return fmt.Errorf("config %q: value of %d bytes exceeds %d", key, len(*value), MaxConfigValueLen)
	}
	return nil
}

// validatePartition checks the invariants every broker relies on: replicas
// distinct; ISR and ELR distinct, drawn from the replicas and disjoint;
// adding and removing replicas drawn from the replicas, disjoint, leaving a
// target; the leader is an ISR member or there is none.
func validatePartition(p Partition, wantIndex int32) error {
	if p.Index != wantIndex {
		return fmt.Errorf("partition index %d, want %d", p.Index, wantIndex)
	}
	if len(p.Replicas) == 0 || len(p.Replicas) > MaxReplicas {
		return fmt.Errorf("partition %d: %d replicas outside 1..%d", p.Index, len(p.Replicas), MaxReplicas)
	}
	if err := distinctNonNegative(p.Replicas); err != nil {
		return fmt.Errorf("partition %d replicas: %w", p.Index, err)
	}
	if err := subsetOfReplicas(p.ISR, p.Replicas); err != nil {
		return fmt.Errorf("partition %d isr: %w", p.Index, err)
	}
	if err := subsetOfReplicas(p.ELR, p.Replicas); err != nil {
		return fmt.Errorf("partition %d elr: %w", p.Index, err)
	}
	for _, r := range p.ELR {
		if slices.Contains(p.ISR, r) {
			return fmt.Errorf("partition %d: broker %d is in both isr and elr", p.Index, r)
		}
	}
	if err := subsetOfReplicas(p.AddingReplicas, p.Replicas); err != nil {
		return fmt.Errorf("partition %d adding replicas: %w", p.Index, err)
	}
	if err := subsetOfReplicas(p.RemovingReplicas, p.Replicas); err != nil {
		return fmt.Errorf("partition %d removing replicas: %w", p.Index, err)
	}
	for _, r := range p.AddingReplicas {
		if slices.Contains(p.RemovingReplicas, r) {
			return fmt.Errorf("partition %d: broker %d is both being added and removed", p.Index, r)
		}
	}
	if len(p.RemovingReplicas) == len(p.Replicas) {
		return fmt.Errorf("partition %d: a reassignment removes every replica", p.Index)
	}
	if p.Leader != NoLeader && !slices.Contains(p.ISR, p.Leader) {
		return fmt.Errorf("partition %d: leader %d is not in isr %v", p.Index, p.Leader, p.ISR)
	}
	if p.LeaderEpoch < 0 || p.PartitionEpoch < 0 {
		return fmt.Errorf("partition %d: negative epoch", p.Index)
	}
	return nil
}

func distinctNonNegative(ids []int32) error {
	for i, id := range ids {
		if id < 0 {
			return fmt.Errorf("negative broker id %d", id)
		}
		if slices.Contains(ids[:i], id) {
			return fmt.Errorf("broker %d listed twice", id)
		}
	}
	return nil
}

func subsetOfReplicas(ids, replicas []int32) error {
	if err := distinctNonNegative(ids); err != nil {
		return err
	}
	for _, id := range ids {
		if !slices.Contains(replicas, id) {
			return fmt.Errorf("broker %d is not a replica", id)
		}
	}
	return nil
}
