/**
 * Reading deploy/kubernetes/ for the deploy suites: the Kustomize base's resources, parsed into plain objects, and
 * small typed views of the parts the checks and the launch test need (pod templates, containers, volumes). The base
 * transforms nothing, so these objects are exactly what `kubectl apply -k deploy/kubernetes` applies.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { REPO } from "../cli/helpers.js";

export const BASE_DIRECTORY = join(REPO, "deploy", "kubernetes");

export interface KubeObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly labels?: Record<string, string> };
  readonly spec?: Record<string, unknown>;
  readonly data?: Record<string, string>;
  readonly stringData?: Record<string, string>;
  /** The file it came from, for messages. */
  readonly file: string;
}

export interface EnvVar {
  readonly name: string;
  readonly value?: string;
  readonly valueFrom?: { fieldRef?: { fieldPath: string }; secretKeyRef?: { name: string; key: string; optional?: boolean }; configMapKeyRef?: { name: string; key: string; optional?: boolean } };
}

export interface Probe {
  readonly httpGet?: { path: string; port: number | string };
  readonly tcpSocket?: { port: number | string };
  readonly exec?: { command: string[] };
}

export interface Container {
  readonly name: string;
  readonly image: string;
  readonly command?: string[];
  readonly args?: string[];
  readonly env?: EnvVar[];
  readonly envFrom?: { secretRef?: { name: string; optional?: boolean }; configMapRef?: { name: string; optional?: boolean } }[];
  readonly ports?: { name?: string; containerPort: number }[];
  readonly volumeMounts?: { name: string; mountPath: string; subPath?: string; readOnly?: boolean }[];
  readonly readinessProbe?: Probe;
  readonly livenessProbe?: Probe;
  readonly startupProbe?: Probe;
  readonly securityContext?: Record<string, unknown>;
}

export interface Volume {
  readonly name: string;
  readonly configMap?: { name: string };
  readonly secret?: { secretName: string };
  readonly emptyDir?: Record<string, unknown>;
  readonly persistentVolumeClaim?: { claimName: string };
}

export interface PodTemplate {
  readonly metadata: { labels: Record<string, string> };
  readonly spec: {
    containers: Container[];
    initContainers?: Container[];
    volumes?: Volume[];
    securityContext?: Record<string, unknown>;
    affinity?: { podAntiAffinity?: Record<string, unknown> };
  };
}

/** A Deployment or StatefulSet. */
export interface Workload extends KubeObject {
  readonly spec: {
    replicas?: number;
    serviceName?: string;
    selector: { matchLabels: Record<string, string> };
    template: PodTemplate;
    volumeClaimTemplates?: { metadata: { name: string } }[];
  };
}

export interface ServiceObject extends KubeObject {
  readonly spec: { selector?: Record<string, string>; clusterIP?: string; ports: { name?: string; port: number; targetPort?: number | string }[] };
}

/** The files the base's kustomization.yaml lists, in its order. */
export function baseResourceFiles(): string[] {
  const kustomization = parseAllDocuments(readFileSync(join(BASE_DIRECTORY, "kustomization.yaml"), "utf8"))[0].toJS() as { resources: string[] };
  return kustomization.resources;
}

/** Every object of the base, in file order; a YAML error fails with the file's name. */
export function loadBase(): KubeObject[] {
  const objects: KubeObject[] = [];
  for (const file of baseResourceFiles()) {
    for (const document of parseAllDocuments(readFileSync(join(BASE_DIRECTORY, file), "utf8"))) {
      if (document.errors.length > 0) throw new Error(`${file}: ${document.errors.map((error) => error.message).join("; ")}`);
      const value = document.toJS() as Omit<KubeObject, "file"> | null;
      if (value !== null) objects.push({ ...value, file });
    }
  }
  return objects;
}

export function workloads(objects: readonly KubeObject[]): Workload[] {
  return objects.filter((object): object is Workload => object.kind === "Deployment" || object.kind === "StatefulSet");
}

export function services(objects: readonly KubeObject[]): ServiceObject[] {
  return objects.filter((object): object is ServiceObject => object.kind === "Service");
}

export function byKindAndName<T extends KubeObject>(objects: readonly KubeObject[], kind: string, name: string): T {
  const found = objects.find((object) => object.kind === kind && object.metadata.name === name);
  if (found === undefined) throw new Error(`no ${kind} ${name} in deploy/kubernetes`);
  return found as T;
}

/** Whether every label of `selector` is on `labels`. */
export function selects(selector: Record<string, string>, labels: Record<string, string>): boolean {
  return Object.entries(selector).every(([key, value]) => labels[key] === value);
}

/** A container's port by number or by name, as probes and Services name them. */
export function containerPort(container: Container, port: number | string): number | undefined {
  const found = (container.ports ?? []).find((candidate) => candidate.containerPort === port || candidate.name === port);
  return found?.containerPort;
}

/** The `silk` containers (command ["silk"]): the image's CLI with a subcommand and its flags as arguments. */
export function silkContainers(objects: readonly KubeObject[]): { workload: Workload; container: Container }[] {
  return workloads(objects).flatMap((workload) =>
    workload.spec.template.spec.containers.filter((container) => container.command?.[0] === "silk").map((container) => ({ workload, container })),
  );
}
