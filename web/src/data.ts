// Where profiles come from: the `deepcontext view` server's JSON API, or the
// data embedded in an exported HTML file. Both hand out the same documents
// (tools/export/view_data.h), so the rest of the app never knows which.

import { decodeSampleStats, decodeViewBinary } from './view_binary';

export interface ProfileEntry {
  id: number;
  label: string;
  state: 'loading' | 'ready' | 'error';
  error?: string;
}

export interface MetricInfo {
  name: string;
  unit: string;
  description: string;
}

// The columnar document of tools/export/view_data.h.
export interface ViewData {
  format: string;
  version: number;
  sources: { path: string; metadata: Record<string, string> }[];
  metrics: MetricInfo[];
  defaultMetric: number;
  kinds: string[];
  strings: string[];
  frames: { kind: ArrayLike<number>; name: ArrayLike<number>; file: ArrayLike<number>; line: ArrayLike<number> };
  nodes: { parent: ArrayLike<number>; frame: ArrayLike<number> };
  // count, min and max are absent until sampleStats() has brought them.
  values: ({ node: ArrayLike<number>; sum: ArrayLike<number> } & Partial<SampleColumns>)[];
}

// The samples' count, min and max of one metric, parallel to its node/sum.
export interface SampleColumns {
  count: ArrayLike<number>;
  min: ArrayLike<number>;
  max: ArrayLike<number>;
}

export interface SourceLine {
  line: number;
  exclusive: Record<string, number>;
  inclusive: Record<string, number>;
}

export interface SourceDocument {
  file: string;
  text: string | null;
  error?: string;
  lines: SourceLine[];
}

// One finding of the analyzer (tools/analyzer/findings_json.h); node.id is
// an index into the same tree as ViewData's nodes.
export interface Finding {
  rule: string;
  severity: 'low' | 'medium' | 'high';
  title: string;
  node: { id: number; path: string[] };
  context: { file: string; line: number; function: string; operator: string; phase: string; kernel: string };
  benefit: {
    low_seconds: number; high_seconds: number; share_low: number; share_high: number;
    basis: string; bytes: number; peak_bytes: number;
  };
  suggestion: string;
  example: string;
}

export interface FindingsDocument {
  findings: Finding[];
  not_checked: { rule: string; reason: string }[];
}

export interface DataSource {
  // True when source files can be asked for (only the server has them).
  readonly servesSources: boolean;
  profiles(): Promise<ProfileEntry[]>;
  tree(id: number): Promise<ViewData>;
  // The rest of tree()'s samples, per metric, or null when tree() had them.
  sampleStats(id: number): Promise<SampleColumns[] | null>;
  source(id: number, file: string): Promise<SourceDocument>;
  // The analyzer's findings, or null where they are not available (an
  // exported HTML file written before exports carried them).
  findings(id: number): Promise<FindingsDocument | null>;
}

export class ApiError extends Error {}

// Talks to the server; the token travels in a header, never in a URL that
// could end up in a log or a Referer.
class ServerSource implements DataSource {
  readonly servesSources = true;
  constructor(private readonly token: string) {}

  private async request(path: string): Promise<Response> {
    const response = await fetch(path, { headers: { 'X-DeepContext-Token': this.token } });
    if (!response.ok) {
      const body = await response.json().catch(() => null);
      const message = body && typeof body.error === 'string' ? body.error : response.statusText;
      throw new ApiError(message);
    }
    return response;
  }

  private async get<T>(path: string): Promise<T> {
    return (await (await this.request(path)).json()) as T;
  }

  async profiles(): Promise<ProfileEntry[]> {
    return (await this.get<{ profiles: ProfileEntry[] }>('/api/profiles')).profiles;
  }

  // The binary form: a million-node tree is then a few typed arrays.
  async tree(id: number): Promise<ViewData> {
    const response = await this.request(`/api/profiles/${id}/tree.bin`);
    const buffer = await response.arrayBuffer();
    // Marks for bench/view_bench.mjs, which splits the first screen's time.
    performance.mark('dc:tree-received');
    const data = decodeViewBinary(buffer);
    performance.mark('dc:tree-decoded');
    return data;
  }

  // Asked for once the first screen is drawn: only the details panel needs
  // these, and they would double what the first screen waits for.
  async sampleStats(id: number): Promise<SampleColumns[]> {
    const response = await this.request(`/api/profiles/${id}/tree-stats.bin`);
    return decodeSampleStats(await response.arrayBuffer());
  }

  source(id: number, file: string): Promise<SourceDocument> {
    return this.get<SourceDocument>(
      `/api/profiles/${id}/source?file=${encodeURIComponent(file)}`);
  }

  findings(id: number): Promise<FindingsDocument> {
    return this.get<FindingsDocument>(`/api/profiles/${id}/findings`);
  }
}

interface EmbeddedProfile extends ProfileEntry {
  data: ViewData;
  // The analyzer's findings for data; absent in files from before exports
  // carried them.
  findings?: FindingsDocument;
}

// Reads the JSON the export put into the page.
class EmbeddedSource implements DataSource {
  readonly servesSources = false;
  constructor(private readonly entries: EmbeddedProfile[]) {}

  async profiles(): Promise<ProfileEntry[]> {
    return this.entries.map(({ id, label, state }) => ({ id, label, state }));
  }

  async tree(id: number): Promise<ViewData> {
    const entry = this.entries.find((e) => e.id === id);
    if (!entry) throw new ApiError(`no profile ${id}`);
    return entry.data;
  }

  async sampleStats(): Promise<null> {
    return null;
  }

  async source(_id: number, file: string): Promise<SourceDocument> {
    return {
      file,
      text: null,
      error: 'source files are not included in exported HTML; open the profile with `deepcontext view` to see them',
      lines: [],
    };
  }

  async findings(id: number): Promise<FindingsDocument | null> {
    return this.entries.find((e) => e.id === id)?.findings ?? null;
  }
}

function readJsonElement(id: string): unknown {
  const element = document.getElementById(id);
  return element ? JSON.parse(element.textContent || 'null') : null;
}

export function openDataSource(): DataSource {
  const config = readJsonElement('dc-config') as { mode?: string } | null;
  if (config && config.mode === 'embedded') {
    const data = readJsonElement('dc-data') as { profiles: EmbeddedProfile[] };
    return new EmbeddedSource(data.profiles);
  }
  const token = new URLSearchParams(window.location.search).get('token') || '';
  return new ServerSource(token);
}
