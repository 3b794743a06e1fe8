/**
 * The worker of one device's host: every page that opens the device (the dashboard, a
 * `?device=` tab) starts this file under the device's host name, as a SharedWorker where there
 * is one (so they all reach this one worker), else as a leader tab's dedicated Worker. The
 * worker's name is the host's name.
 */
import { hostEngine } from '@tidemark/worker/host'
import { deviceHostOptions } from './deviceHost.ts'
import { workerHostPlatform } from './hostPlatform.ts'

hostEngine(deviceHostOptions(self.name, workerHostPlatform()))
