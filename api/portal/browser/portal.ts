/**
 * The portal's only script (bundled by `npm run build` into dist/bundle/portal.js):
 * every page works without it; it adds what a browser alone does not do. Times show
 * in the reader's zone, a button with `data-confirm` asks first, and a CSV file
 * chosen for a payout batch fills the form's text box.
 */

function localTimes(): void {
  for (const el of document.querySelectorAll<HTMLTimeElement>('time[datetime]')) {
    const at = new Date(el.dateTime);
    if (!Number.isNaN(at.getTime())) {
      el.title = el.textContent ?? '';
      el.textContent = at.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
    }
  }
}

function confirmations(): void {
  document.addEventListener('submit', (event) => {
    const button = (event as SubmitEvent).submitter;
    const question = button?.getAttribute('data-confirm');
    if (question && !window.confirm(question)) event.preventDefault();
  });
}

function csvFiles(): void {
  for (const input of document.querySelectorAll<HTMLInputElement>('input[type=file][data-fills]')) {
    input.addEventListener('change', () => {
      const file = input.files?.[0];
      const target = document.getElementById(input.dataset.fills ?? '');
      if (!file || !(target instanceof HTMLTextAreaElement)) return;
      void file.text().then((text) => {
        target.value = text;
      });
    });
  }
}

localTimes();
confirmations();
csvFiles();
