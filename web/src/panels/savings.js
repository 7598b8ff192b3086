// What saves the most: each single change, the bytes it saves and the devices it adds.
import { $, button } from '../dom.js';
import { whenAnswered } from './later.js';

export function createSavingsPanel({ estimator, render }) {
  return {
    update: whenAnswered(
      $('savings-status'),
      ({ setup }) => estimator.savings(setup),
      (list) => {
        $('savings-list').replaceChildren(
          ...list.savings.map((saving) => {
            const item = document.createElement('li');
            const added =
              saving.devicesAdded > 0
                ? `, +${estimator.formatCount(saving.devicesAdded)} device${saving.devicesAdded === 1 ? '' : 's'}`
                : '';
            item.textContent =
              `${saving.label}: saves ${estimator.formatBytes(saving.bytesSaved)}, leaving ` +
              `${estimator.formatBytes(saving.estimate.bytes.totalBytes)} on the most loaded device${added}.`;
            item.append(
              button(
                'Apply',
                () => render(saving.estimate.setup, { reveal: true }),
                `Apply: ${saving.label}`,
              ),
            );
            return item;
          }),
        );
      },
    ),
  };
}
