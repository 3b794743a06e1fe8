/** The series every simulated device reports: one `StreamEvent.key` each. */
export type MetricKey = 'temp' | 'humidity' | 'battery'

export interface Metric {
  readonly key: MetricKey
  readonly label: string
  readonly unit: string
  /** Decimals shown for a window mean. */
  readonly digits: number
}

export const METRICS: readonly Metric[] = [
  { key: 'temp', label: 'Temperature', unit: '°C', digits: 2 },
  { key: 'humidity', label: 'Humidity', unit: '%', digits: 1 },
  { key: 'battery', label: 'Battery', unit: '%', digits: 1 },
]
