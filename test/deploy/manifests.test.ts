/**
 * deploy/kubernetes/ checked without a cluster: every object parses and passes the Kubernetes API schema's
 * validator (kubernetes-models), every name one object gives another exists (Services, ConfigMaps, Secrets, volume
 * claims, probe ports, scale targets), the cluster.json the processes read agrees with the workloads that run them,
 * the project ConfigMap is examples/, and every `silk` container runs a subcommand with flags that bin/silk.ts
 * declares. The launch test (launch.test.ts) then runs the same containers' commands.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigMap, Secret, Service } from "kubernetes-models/v1";
import { Deployment, StatefulSet } from "kubernetes-models/apps/v1";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2";
import { Job } from "kubernetes-models/batch/v1";
import { parse, parseAllDocuments } from "yaml";
import { checkClusterManifest, type ClusterManifest } from "../../cluster/nats/manifest.js";
import { checkProject } from "../../protocol/helixql/query-check.js";
import { REPO, runSilk } from "../cli/helpers.js";
import {
  BASE_DIRECTORY,
  baseResourceFiles,
  byKindAndName,
  containerPort,
  loadBase,
  selects,
  services,
  silkContainers,
  workloads,
  type Container,
  type KubeObject,
  type Workload,
} from "./manifests.js";

const objects = loadBase();

/** The validator of each kind the base uses; a kind not listed here fails the schema test. */
const VALIDATORS: Record<string, (object: Record<string, unknown>) => void> = {
  "v1/ConfigMap": (object) => new ConfigMap(object).validate(),
  "v1/Secret": (object) => new Secret(object).validate(),
  "v1/Service": (object) => new Service(object).validate(),
  "apps/v1/Deployment": (object) => new Deployment(object).validate(),
  "apps/v1/StatefulSet": (object) => new StatefulSet(object).validate(),
  "policy/v1/PodDisruptionBudget": (object) => new PodDisruptionBudget(object).validate(),
  "autoscaling/v2/HorizontalPodAutoscaler": (object) => new HorizontalPodAutoscaler(object).validate(),
};

function allContainers(workload: Workload): Container[] {
  return [...(workload.spec.template.spec.initContainers ?? []), ...workload.spec.template.spec.containers];
}

function clusterManifest(): ClusterManifest {
  const configMap = byKindAndName<KubeObject>(objects, "ConfigMap", "silk-cluster");
  return checkClusterManifest(JSON.parse(configMap.data!["cluster.json"]), "silk-cluster cluster.json");
}

function flagValue(args: readonly string[], flag: string): string | undefined {
  const index = args.indexOf(flag);
  return index < 0 ? undefined : args[index + 1];
}

const partitionSets = workloads(objects).filter((workload) => silkContainers([workload]).some(({ container }) => container.args?.[0] === "partition"));

describe("deploy/kubernetes", () => {
  it("lists every manifest file in its kustomization, and each parses", () => {
    const files = readdirSync(BASE_DIRECTORY).filter((file) => file.endsWith(".yaml") && file !== "kustomization.yaml");
    expect([...baseResourceFiles()].sort()).toEqual(files.sort());
    expect(objects.length).toBeGreaterThan(0);
    for (const object of objects) {
      expect(typeof object.apiVersion, object.file).toBe("string");
      expect(typeof object.metadata?.name, object.file).toBe("string");
    }
    const names = objects.map((object) => `${object.kind}/${object.metadata.name}`);
    expect(new Set(names).size).toBe(names.length);
  });

  it("holds only objects that pass the Kubernetes API schemas", () => {
    for (const { file, ...object } of objects) {
      const validate = VALIDATORS[`${object.apiVersion}/${object.kind}`];
      expect(validate, `${file}: ${object.apiVersion} ${object.kind} has no validator here`).toBeDefined();
      expect(() => validate(object as unknown as Record<string, unknown>), `${file}: ${object.kind} ${object.metadata.name}`).not.toThrow();
    }
  });

  it("renders with kubectl's Kustomize, where kubectl is installed, to the same objects", () => {
    const probe = spawnSync("kubectl", ["version", "--client"], { encoding: "utf8" });
    if (probe.status !== 0) {
      // kubectl is not one of the tools make test installs; the base transforms nothing, so loadBase is its rendering.
      console.log("deploy: kubectl not installed; the Kustomize rendering was not compared");
      return;
    }
    const rendered = execFileSync("kubectl", ["kustomize", BASE_DIRECTORY], { encoding: "utf8" })
      .split(/^---$/m)
      .map((text) => parse(text) as KubeObject | null)
      .filter((object): object is KubeObject => object !== null);
    const key = (object: KubeObject): string => `${object.kind}/${object.metadata.name}`;
    expect(rendered.map(key).sort()).toEqual(objects.map(key).sort());
  });

  it("has Services that select the pods of a workload, on ports those pods expose", () => {
    for (const service of services(objects)) {
      const selector = service.spec.selector ?? {};
      const selected = workloads(objects).filter((workload) => selects(selector, workload.spec.template.metadata.labels));
      expect(selected.length, `Service ${service.metadata.name} selects no workload`).toBeGreaterThan(0);
      if (service.spec.clusterIP === "None" && service.spec.ports === undefined) continue;
      for (const port of service.spec.ports ?? []) {
        for (const workload of selected) {
          const exposed = workload.spec.template.spec.containers.some((container) => containerPort(container, port.targetPort ?? port.port) !== undefined);
          expect(exposed, `Service ${service.metadata.name} port ${port.port} → ${String(port.targetPort)} is no port of ${workload.metadata.name}`).toBe(true);
        }
      }
    }
  });

  it("names only ConfigMaps, Secrets, volumes, claims and governing Services that exist", () => {
    const exists = (kind: string, name: string): boolean => objects.some((object) => object.kind === kind && object.metadata.name === name);
    for (const workload of workloads(objects)) {
      const where = `${workload.kind} ${workload.metadata.name}`;
      expect(selects(workload.spec.selector.matchLabels, workload.spec.template.metadata.labels), `${where}: selector`).toBe(true);
      if (workload.kind === "StatefulSet") expect(exists("Service", workload.spec.serviceName!), `${where}: serviceName`).toBe(true);
      const volumes = workload.spec.template.spec.volumes ?? [];
      for (const volume of volumes) {
        if (volume.configMap !== undefined) expect(exists("ConfigMap", volume.configMap.name), `${where}: volume ${volume.name}`).toBe(true);
        if (volume.secret !== undefined) expect(exists("Secret", volume.secret.secretName), `${where}: volume ${volume.name}`).toBe(true);
        expect(volume.persistentVolumeClaim, `${where}: claims come from volumeClaimTemplates`).toBeUndefined();
      }
      const mountable = new Set([...volumes.map((volume) => volume.name), ...(workload.spec.volumeClaimTemplates ?? []).map((claim) => claim.metadata.name)]);
      for (const container of allContainers(workload)) {
        for (const mount of container.volumeMounts ?? []) expect(mountable.has(mount.name), `${where}: mount ${mount.name}`).toBe(true);
        for (const source of container.envFrom ?? []) {
          if (source.secretRef !== undefined) expect(exists("Secret", source.secretRef.name), `${where}: envFrom ${source.secretRef.name}`).toBe(true);
          if (source.configMapRef !== undefined) expect(exists("ConfigMap", source.configMapRef.name), `${where}: envFrom ${source.configMapRef.name}`).toBe(true);
        }
        for (const variable of container.env ?? []) {
          const secret = variable.valueFrom?.secretKeyRef;
          if (secret !== undefined) expect(byKindAndName<KubeObject>(objects, "Secret", secret.name).stringData?.[secret.key], `${where}: ${variable.name}`).toBeDefined();
        }
        // A file mounted with subPath must be a key of its ConfigMap or Secret.
        for (const mount of container.volumeMounts ?? []) {
          if (mount.subPath === undefined) continue;
          const volume = volumes.find((candidate) => candidate.name === mount.name)!;
          const source = volume.configMap !== undefined ? byKindAndName<KubeObject>(objects, "ConfigMap", volume.configMap.name) : undefined;
          expect(source?.data?.[mount.subPath], `${where}: subPath ${mount.subPath}`).toBeDefined();
        }
      }
    }
    for (const object of objects) {
      if (object.kind === "HorizontalPodAutoscaler") {
        const target = object.spec!.scaleTargetRef as { kind: string; name: string };
        expect(exists(target.kind, target.name), `HPA ${object.metadata.name}`).toBe(true);
      }
      if (object.kind === "PodDisruptionBudget") {
        const selector = (object.spec!.selector as { matchLabels: Record<string, string> }).matchLabels;
        expect(workloads(objects).filter((workload) => selects(selector, workload.spec.template.metadata.labels)).length, `PDB ${object.metadata.name}`).toBe(1);
      }
    }
  });

  it("probes every HTTP server on /health (NATS on /healthz; a partition replica's readiness on /ready: caught up, its startup long enough to wait) at a port its container exposes", () => {
    for (const workload of workloads(objects)) {
      for (const container of workload.spec.template.spec.containers) {
        const where = `${workload.metadata.name}/${container.name}`;
        for (const probe of [container.readinessProbe, container.livenessProbe, container.startupProbe]) {
          const port = probe?.httpGet?.port ?? probe?.tcpSocket?.port;
          if (port !== undefined) expect(containerPort(container, port), `${where}: probe port ${port}`).toBeDefined();
        }
        const http = (container.ports ?? []).find((port) => port.name === "http" || port.name === "monitor" || port.name === "health");
        if (http === undefined) continue;
        expect(container.readinessProbe?.httpGet, `${where}: readiness`).toBeDefined();
        expect(container.livenessProbe?.httpGet, `${where}: liveness`).toBeDefined();
        const readiness = container.command?.[0] !== "silk" ? /^\/healthz/ : container.args?.[0] === "partition" ? /^\/ready$/ : /^\/health$/;
        expect(container.readinessProbe!.httpGet!.path, `${where}: readiness path`).toMatch(readiness);
        if (container.command?.[0] === "silk") expect(container.livenessProbe!.httpGet!.path, `${where}: liveness path`).toBe("/health");
        // A replica serves its health port only once it runs (a log replayed, a snapshot restored, or a partition being
        // added carved): a startup probe holds the liveness probe off for that long.
        if (container.args?.[0] === "partition") {
          expect(container.startupProbe?.httpGet?.path, `${where}: startup path`).toBe("/health");
          const probe = container.startupProbe as unknown as { periodSeconds: number; failureThreshold: number };
          expect(probe.periodSeconds * probe.failureThreshold, `${where}: startup allowance (s)`).toBeGreaterThanOrEqual(1_800);
        }
      }
    }
  });

  it("runs every process as non-root, and spreads NATS servers and each partition's replicas over nodes", () => {
    for (const workload of workloads(objects)) {
      expect(workload.spec.template.spec.securityContext?.runAsNonRoot, workload.metadata.name).toBe(true);
      for (const container of allContainers(workload)) expect(container.securityContext?.allowPrivilegeEscalation, `${workload.metadata.name}/${container.name}`).toBe(false);
    }
    for (const workload of [byKindAndName<Workload>(objects, "StatefulSet", "silk-nats"), ...partitionSets]) {
      const required = (workload.spec.template.spec.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? []) as {
        topologyKey: string;
        labelSelector: { matchLabels: Record<string, string> };
      }[];
      expect(
        required.some((term) => term.topologyKey === "kubernetes.io/hostname" && selects(term.labelSelector.matchLabels, workload.spec.template.metadata.labels)),
        `${workload.metadata.name}: anti-affinity`,
      ).toBe(true);
    }
  });

  it("has a cluster.json that agrees with the NATS, partition and coordinator workloads", () => {
    const manifest = clusterManifest();
    const nats = byKindAndName<Workload>(objects, "StatefulSet", "silk-nats");
    const clientPort = containerPort(nats.spec.template.spec.containers[0], "client");
    expect(nats.spec.replicas).toBe(3);
    expect(manifest.nats).toEqual(Array.from({ length: nats.spec.replicas! }, (_, index) => `nats://silk-nats-${index}.${nats.spec.serviceName}:${clientPort}`));
    const partitions = partitionSets.map((workload) => Number(flagValue(workload.spec.template.spec.containers[0].args!, "--partition")));
    expect(partitions.sort()).toEqual(Array.from({ length: manifest.partitions }, (_, index) => index));
    for (const workload of partitionSets) expect(workload.spec.replicas, workload.metadata.name).toBe(manifest.replicas);
    const coordinator = byKindAndName<Workload>(objects, "Deployment", "silk-coordinator").spec.template.spec.containers[0];
    expect(Number(flagValue(coordinator.args!, "--port"))).toBe(manifest.port);
    // Each cluster process finds cluster.json in its --dir / --cluster directory and the project where it says.
    for (const { workload, container } of silkContainers(objects)) {
      const mounts = container.volumeMounts ?? [];
      const project = mounts.find((mount) => mount.name === "project");
      expect(project?.mountPath, `${workload.metadata.name}: project mount`).toBe(flagValue(container.args!, "--project") ?? manifest.project);
      const directory = flagValue(container.args!, "--dir") ?? flagValue(container.args!, "--cluster");
      if (directory === undefined) continue;
      const cluster = mounts.find((mount) => mount.mountPath === join(directory, "cluster.json")) ?? mounts.find((mount) => mount.mountPath === directory);
      expect(cluster?.name, `${workload.metadata.name}: cluster.json in ${directory}`).toBe("cluster");
    }
  });

  it("ships examples/ as the project ConfigMap, and it checks clean", () => {
    const data = byKindAndName<KubeObject>(objects, "ConfigMap", "silk-project").data!;
    const files = readdirSync(join(REPO, "examples")).filter((file) => file.endsWith(".hx")).sort();
    expect(Object.keys(data).sort()).toEqual(files);
    for (const file of files) expect(data[file], file).toBe(readFileSync(join(REPO, "examples", file), "utf8"));
    const checked = checkProject(files.map((file) => ({ file, text: data[file] })));
    expect(checked.diagnostics).toEqual([]);
  });

  it("keeps one writer coordinator: Recreate, and an HPA of at most one replica", () => {
    // Until several coordinators can serve one cluster, a second is refused (docs/CLUSTER.md); raise both together.
    const deployment = byKindAndName<Workload>(objects, "Deployment", "silk-coordinator");
    expect((deployment.spec as unknown as { strategy: { type: string } }).strategy.type).toBe("Recreate");
    expect(byKindAndName<KubeObject>(objects, "HorizontalPodAutoscaler", "silk-coordinator").spec!.maxReplicas).toBe(1);
  });

  it("runs silk subcommands with flags that bin/silk.ts declares", async () => {
    const declared = new Map<string, Set<string>>();
    for (const { workload, container } of silkContainers(objects)) {
      const [subcommand, ...rest] = container.args ?? [];
      expect(subcommand, `${workload.metadata.name}: subcommand`).toMatch(/^[a-z]+$/);
      if (!declared.has(subcommand)) {
        const help = await runSilk([subcommand, "--help"]);
        expect(help.code, `silk ${subcommand} --help: ${help.stderr}`).toBe(0);
        declared.set(subcommand, new Set([...help.stdout.matchAll(/^\s+(?:-\w, )?(--[a-z][a-z-]*)/gm)].map((match) => match[1])));
      }
      for (const flag of rest.filter((arg) => arg.startsWith("--"))) {
        expect(declared.get(subcommand)!.has(flag), `${workload.metadata.name}: silk ${subcommand} ${flag}`).toBe(true);
      }
    }
    expect([...declared.keys()].sort()).toEqual(["gateway", "partition", "serve"]);
  });

  it("has Jobs outside the base (deploy/kubernetes/jobs/) that pass the schema, mount the base's ConfigMaps and run silk cluster move or add-partition with declared flags", async () => {
    const directory = join(BASE_DIRECTORY, "jobs");
    const jobs = readdirSync(directory)
      .filter((file) => file.endsWith(".yaml"))
      .flatMap((file) => parseAllDocuments(readFileSync(join(directory, file), "utf8")).map((document) => ({ file, job: document.toJS() as KubeObject & { spec: { template: Workload["spec"]["template"] } } })));
    expect(jobs.map(({ file, job }) => [file, job.kind])).toEqual([
      ["add-partition.yaml", "Job"],
      ["move.yaml", "Job"],
    ]);
    for (const { file, job } of jobs) {
      new Job(job as unknown as Record<string, unknown>).validate();
      const pod = job.spec.template.spec;
      for (const volume of pod.volumes ?? []) {
        if (volume.configMap !== undefined) expect(objects.some((object) => object.kind === "ConfigMap" && object.metadata.name === volume.configMap!.name), `${file}: volume ${volume.name}`).toBe(true);
      }
      for (const container of pod.containers) {
        expect(container.command, file).toEqual(["silk"]);
        const [command, subcommand, ...rest] = container.args ?? [];
        expect(command, file).toBe("cluster");
        expect(["move", "add-partition"], file).toContain(subcommand);
        // The directory it reads is where the cluster ConfigMap is mounted.
        const mounted = (container.volumeMounts ?? []).find((mount) => mount.mountPath === flagValue(rest, "--dir"));
        expect(pod.volumes?.find((volume) => volume.name === mounted?.name)?.configMap?.name, `${file}: --dir`).toBe("silk-cluster");
        const help = await runSilk([command, subcommand, "--help"]);
        expect(help.code, help.stderr).toBe(0);
        const declared = new Set([...help.stdout.matchAll(/^\s+(?:-\w, )?(--[a-z][a-z-]*)/gm)].map((match) => match[1]));
        for (const flag of rest.filter((arg) => arg.startsWith("--"))) expect(declared.has(flag), `${file}: silk cluster ${subcommand} ${flag}`).toBe(true);
        if (subcommand === "move") {
          // The partitions it names exist.
          for (const flag of ["--from", "--to"]) expect(Number(flagValue(rest, flag)), `${file}: ${flag}`).toBeLessThan(clusterManifest().partitions);
        } else {
          // It adds the next partition, whose replicas a StatefulSet runs: it starts none itself.
          expect(rest, file).toContain("--existing");
          expect(Number(flagValue(rest, "--partition")), `${file}: --partition`).toBe(clusterManifest().partitions);
        }
      }
    }
  });
});
